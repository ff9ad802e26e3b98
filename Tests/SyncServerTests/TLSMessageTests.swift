import Foundation
import NIOSSL
import SyncBackend
import SyncServer
import TestSupport
import Testing

@testable import SyncClient

/// TLS failures as people read them (`TLSFailure`): one line saying what failed and what to do
/// (`--ca-file`, the host name, a renewed certificate), never BoringSSL's error stack with its
/// build paths.
@Suite struct TLSMessageTests {
    static func leaksInternals(_ text: String) -> Bool {
        ["BoringSSL", "handshake.cc", ".build/", "/checkouts/", "NIOSSL", "OPENSSL_internal"].contains {
            text.contains($0)
        }
    }

    /// A self-signed certificate for localhost and 127.0.0.1 valid only in January 2020 (`openssl
    /// ca -selfsign` takes explicit dates; `req -x509` does not).
    static func makeExpiredCertificate(in directory: String) throws -> TLSFiles {
        let files = TLSFiles(certificatePath: directory + "/expired.crt", keyPath: directory + "/expired.key")
        try FileManager.default.createDirectory(atPath: directory + "/ca/new", withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: directory + "/ca/index.txt"))
        try Data("01\n".utf8).write(to: URL(fileURLWithPath: directory + "/ca/serial"))
        let configuration = """
            [ca]
            default_ca = d
            [d]
            dir = \(directory)/ca
            database = $dir/index.txt
            new_certs_dir = $dir/new
            serial = $dir/serial
            default_md = sha256
            policy = p
            [p]
            commonName = supplied
            [ext]
            subjectAltName = DNS:localhost,IP:127.0.0.1
            basicConstraints = CA:TRUE
            """
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: directory + "/ca.cnf"))
        try openssl([
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", files.keyPath, "-out",
            directory + "/expired.csr",
        ])
        try openssl([
            "ca", "-batch", "-config", directory + "/ca.cnf", "-selfsign", "-keyfile", files.keyPath, "-in",
            directory + "/expired.csr", "-out", files.certificatePath, "-startdate", "20200101000000Z", "-enddate",
            "20200102000000Z", "-extensions", "ext",
        ])
        return files
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("openssl \(arguments[0]) failed") }
    }

    @Test func anUntrustedCertificateSuggestsCAFile() async throws {
        let directory = try TemporaryDirectory("syncfs-tls")
        defer { directory.remove() }
        let files = try TLSTests.makeCertificate(in: directory.path)
        try await ServerFixture.run(tls: files) { fixture in
            let address = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            do throws(HTTPContainerError) {
                _ = try await HTTPContainer.fetchInfo(address: address, token: fixture.token)
                Issue.record("a self-signed certificate was trusted without --ca-file")
            } catch {
                guard case .tls(let message) = error else {
                    Issue.record("not a TLS failure: \(error)")
                    return
                }
                #expect(message.contains("is not trusted") && message.contains("--ca-file FILE"), "\(message)")
                #expect(!Self.leaksInternals(message), "\(message)")
            }
        }
    }

    @Test func anExpiredCertificateInTheCAFileSaysItExpired() async throws {
        let directory = try TemporaryDirectory("syncfs-tls")
        defer { directory.remove() }
        let files = try Self.makeExpiredCertificate(in: directory.path)
        #expect(TLSFailure.outOfDate(files.certificatePath)?.hasPrefix("expired on 2020-01-02") == true)
        try await ServerFixture.run(tls: files) { fixture in
            let address = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            do throws(HTTPContainerError) {
                _ = try await HTTPContainer.fetchInfo(
                    address: address, token: fixture.token, caFile: files.certificatePath)
                Issue.record("an expired certificate was accepted")
            } catch {
                guard case .tls(let message) = error else {
                    Issue.record("not a TLS failure: \(error)")
                    return
                }
                #expect(message.contains("expired on 2020-01-02"), "\(message)")
                #expect(message.contains("--ca-file"), "\(message)")
                #expect(!Self.leaksInternals(message), "\(message)")
            }
        }
    }

    @Test func httpsToAPlainHTTPServerSaysTheHandshakeFailed() async throws {
        try await ServerFixture.run { fixture in
            let plain = fixture.server.url(container: fixture.name)
            let address = try ServerAddress(parsing: "https://" + plain.dropFirst("http://".count))
            do throws(HTTPContainerError) {
                _ = try await HTTPContainer.fetchInfo(address: address, token: fixture.token)
                Issue.record("https to a plain HTTP server answered")
            } catch {
                guard case .tls(let message) = error else {
                    Issue.record("not a TLS failure: \(error)")
                    return
                }
                #expect(message.contains("TLS handshake") && message.contains("HTTPS on this port"), "\(message)")
                #expect(!Self.leaksInternals(message), "\(message)")
            }
        }
    }

    @Test func theKindsAreToldApart() {
        #expect(TLSFailure.kind(of: NIOSSLExtraError.failedToValidateHostname) == .wrongHostName)
        #expect(TLSFailure.kind(of: NIOSSLError.unableToValidateCertificate) == .untrustedCertificate)
        #expect(TLSFailure.kind(of: NIOSSLError.uncleanShutdown) == .brokenOff)
        #expect(TLSFailure.kind(of: CocoaError(.fileNoSuchFile)) == nil)
        let host = TLSFailure.describe(
            NIOSSLExtraError.failedToValidateHostname, origin: "https://h:1", host: "h", caFile: nil)
        #expect(host?.contains("not issued for the host name 'h'") == true, "\(host ?? "")")
    }
}
