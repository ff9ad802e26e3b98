import AsyncHTTPClient
import Foundation
import NIOSSL
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// HTTPS with a self-signed certificate made by the `openssl` command.
@Suite struct TLSTests {
    /// A self-signed certificate for localhost and 127.0.0.1, and its key, in `directory`.
    static func makeCertificate(in directory: String, name: String = "server") throws -> TLSFiles {
        let files = TLSFiles(certificatePath: directory + "/\(name).crt", keyPath: directory + "/\(name).key")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "1",
            "-keyout", files.keyPath, "-out", files.certificatePath,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("openssl req failed (\(process.terminationStatus)); is the openssl command installed?")
        }
        return files
    }

    @Test func httpsWorksWithTheTrustedCertificateAndPlainHTTPDoesNot() async throws {
        let directory = try TemporaryDirectory("syncfs-tls")
        defer { directory.remove() }
        let files = try Self.makeCertificate(in: directory.path)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(files.certificatePath))
        try await ServerFixture.run(tls: files, client: HTTPClient.Configuration(tlsConfiguration: tls)) { fixture in
            #expect(fixture.server.baseURL.hasPrefix("https://"))
            let reply = try await fixture.send(.GET, fixture.path())
            #expect(reply.status == 200)
            #expect(try reply.decode(ContainerInfo.self).name == fixture.name)
            // Plain HTTP to the TLS port gets no answer of this protocol.
            var plain = HTTPClientRequest(url: "http://127.0.0.1:\(fixture.server.port)/v1/health")
            plain.method = .GET
            await #expect(throws: (any Error).self) {
                _ = try await ServerFixture.execute(fixture.client, plain, timeout: .seconds(10))
            }
        }
        // Without trusting the certificate, the handshake fails.
        try await ServerFixture.run(tls: files) { fixture in
            await #expect(throws: (any Error).self) { _ = try await fixture.send(.GET, WireProtocol.Path.health) }
        }
    }

    @Test func missingUnreadableOrMismatchedFilesAreBadInput() throws {
        let directory = try TemporaryDirectory("syncfs-tls")
        defer { directory.remove() }
        let first = try Self.makeCertificate(in: directory.path, name: "first")
        let second = try Self.makeCertificate(in: directory.path, name: "second")
        let garbage = directory.path + "/garbage.pem"
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: garbage))
        let cases: [(String, TLSFiles)] = [
            ("missing certificate", TLSFiles(certificatePath: directory.path + "/none.crt", keyPath: first.keyPath)),
            ("missing key", TLSFiles(certificatePath: first.certificatePath, keyPath: directory.path + "/none.key")),
            ("not PEM", TLSFiles(certificatePath: garbage, keyPath: first.keyPath)),
            ("key of another certificate", TLSFiles(certificatePath: first.certificatePath, keyPath: second.keyPath)),
            ("key as certificate", TLSFiles(certificatePath: first.keyPath, keyPath: first.keyPath)),
        ]
        for (what, files) in cases {
            do {
                _ = try SyncServer(.init(root: directory.path, tls: files))
                Issue.record("\(what): accepted")
            } catch {
                #expect(error.kind == .badInput, "\(what): \(error)")
                #expect(error.exitStatus == .badInput)
            }
        }
        #expect(throws: Never.self) { _ = try SyncServer(.init(root: directory.path, tls: first)) }
    }
}
