import AsyncHTTPClient
import Foundation
import NIOCore
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// `syncfs-mount serve` and `syncfs-mount token` as scripts use them: the readiness line, exit
/// codes, and tokens made and revoked by one process taking effect in a running server.
@Suite struct CommandLineTests {
    @Test func tokensMadeAndRevokedByTheCommandWorkInARunningServer() async throws {
        let directory = try TemporaryDirectory("syncfs-cli")
        defer { directory.remove() }
        let root = directory.path + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        let created = try Binary.run(["token", "create", "--root", root, "--container", "docs", "--label", "laptop"])
        #expect(created.status == 0, "\(created.stderr)")
        let token = created.stdout.trimmingCharacters(in: .newlines)
        #expect(created.stdout == token + "\n", "stdout must hold the token alone")
        #expect(token.hasPrefix("sfs_") && token.utf8.count == 68)
        let listed = try Binary.run(["token", "list", "--root", root, "--json"])
        let records = try JSONDecoder().decode([TokenStore.Record].self, from: Data(listed.stdout.utf8))
        #expect(records.count == 1)
        #expect(records.first?.container == "docs" && records.first?.label == "laptop" && records.first?.revoked == nil)
        let id = try #require(records.first?.id)
        #expect(created.stderr.contains(id))
        #expect(FileManager.default.fileExists(atPath: root + "/docs/" + LocalContainer.markerName))

        let server = try ServeProcess.start(root: root)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var status: Int32?
        do {
            #expect(server.listeningLine == "listening on http://127.0.0.1:\(server.port)")
            let url = "http://127.0.0.1:\(server.port)" + WireProtocol.Path.container("docs")
            #expect(try await Self.get(url, token: token, client).status == 200)
            let revoked = try Binary.run(["token", "revoke", "--root", root, id])
            #expect(revoked.status == 0, "\(revoked.stderr)")
            #expect(try await Self.get(url, token: token, client).status == 401)
            let again = try Binary.run(["token", "revoke", "--root", root, id])
            #expect(again.status == 0)
            #expect(again.stderr.contains("already"))
        } catch {
            Issue.record("\(error)")
        }
        try? await client.shutdown()
        status = server.stop()
        #expect(status == 0, "serve did not exit 0 after SIGTERM; log:\n\(server.log)")
    }

    /// `serve --gc-every DURATION --gc-grace SECONDS`: bad values are usage errors (64) with a
    /// message; good ones start the schedule and the server still stops cleanly on SIGTERM.
    @Test func garbageCollectionOptionsAreChecked() throws {
        let directory = try TemporaryDirectory("syncfs-cli")
        defer { directory.remove() }
        let root = directory.path
        let serve = ["serve", "--root", root, "--listen", "127.0.0.1:0"]
        for (extra, message) in [
            (["--gc-every", "59s"], "at least 60 s"), (["--gc-every", "6x"], "--gc-every must be a duration"),
            (["--gc-every=-1h"], "--gc-every must be a duration"), (["--gc-every", ""], "--gc-every"),
            (["--gc-grace", "10"], "--gc-grace goes with --gc-every"),
            (["--gc-every", "1h", "--gc-grace=-1"], "--gc-grace must be"),
        ] {
            let result = try Binary.run(serve + extra)
            #expect(result.status == 64, "\(extra): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains(message), "\(extra): \(result.stderr)")
        }
        _ = try LocalContainer.openOrCreate(at: root + "/docs")
        let server = try ServeProcess.start(root: root, extra: ["--gc-every", "60s", "--gc-grace", "0"])
        let status = server.stop()
        #expect(status == 0, "serve did not exit 0 after SIGTERM; log:\n\(server.log)")
        #expect(server.log.contains("garbage collection every 60 s, grace 0 s"), "\(server.log)")
    }

    @Test func badInputHasTheDocumentedExitCodes() throws {
        let directory = try TemporaryDirectory("syncfs-cli")
        defer { directory.remove() }
        let root = directory.path
        let missing = root + "/missing"
        try FileManager.default.createDirectory(atPath: root + "/foreign", withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: root + "/foreign/file", contents: Data("x".utf8))
        let first = try TLSTests.makeCertificate(in: root, name: "first")
        let second = try TLSTests.makeCertificate(in: root, name: "second")
        let cases: [([String], Int32)] = [
            (["serve", "--root", missing, "--listen", "127.0.0.1:0"], 65),
            (["serve", "--root", root, "--listen", "127.0.0.1"], 64),
            (["serve", "--root", root, "--listen", "::1:80"], 64),
            (["serve", "--root", root, "--listen", "127.0.0.1:65536"], 64),
            (["serve", "--root", root, "--listen", "127.0.0.1:0", "--tls-cert", first.certificatePath], 64),
            (
                [
                    "serve", "--root", root, "--listen", "127.0.0.1:0", "--tls-cert", first.certificatePath,
                    "--tls-key",
                    second.keyPath,
                ], 65
            ),
            (
                [
                    "serve", "--root", root, "--listen", "127.0.0.1:0", "--tls-cert", root + "/none.pem", "--tls-key",
                    first.keyPath,
                ], 65
            ),
            (["token", "create", "--root", missing, "--container", "docs"], 65),
            (["token", "create", "--root", root, "--container", ".."], 65),
            (["token", "create", "--root", root, "--container", "foreign"], 65),
            (["token", "revoke", "--root", root, "deadbeef"], 65),
            (["token", "list", "--root", missing], 65),
        ]
        for (arguments, expected) in cases {
            let result = try Binary.run(arguments)
            #expect(result.status == expected, "\(arguments): \(result.status) \(result.stderr)")
            #expect(!result.stderr.isEmpty, "\(arguments): no message")
            #expect(result.stdout.isEmpty, "\(arguments): printed \(result.stdout)")
        }
        // None of them created anything (no container, no token database).
        let left = try FileManager.default.contentsOfDirectory(atPath: root).sorted()
        #expect(left == ["first.crt", "first.key", "foreign", "second.crt", "second.key"])
    }

    @Test func aPortInUseIs75AndIPv6AddressesParse() throws {
        let directory = try TemporaryDirectory("syncfs-cli")
        defer { directory.remove() }
        let server = try ServeProcess.start(root: directory.path)
        defer { server.stop() }
        let second = try Binary.run(["serve", "--root", directory.path, "--listen", "127.0.0.1:\(server.port)"])
        #expect(second.status == 75, "\(second.stderr)")
        #expect(ListenAddress(parsing: "[::1]:8443") == ListenAddress(host: "::1", port: 8443))
        #expect(ListenAddress(parsing: "[::1]:8443")?.description == "[::1]:8443")
        #expect(ListenAddress(parsing: "0.0.0.0:0") == ListenAddress(host: "0.0.0.0", port: 0))
        for bad in ["::1:8443", "[::1]8443", "host:", ":80", "host:-1", "host:99999", "[127.0.0.1]:80", "a b:80"] {
            #expect(ListenAddress(parsing: bad) == nil, "\(bad)")
        }
    }

    /// `token create` and `serve` run with umask 0o077 whatever they inherit: the containers,
    /// their databases and the chunk files are the server's user's alone.
    @Test func containersAndChunksArePrivateToTheServersUser() async throws {
        let directory = try TemporaryDirectory("syncfs-cli")
        defer { directory.remove() }
        let root = directory.path + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        let created = try Binary.run(["token", "create", "--root", root, "--container", "docs"], umask: "022")
        #expect(created.status == 0, "\(created.stderr)")
        let token = created.stdout.trimmingCharacters(in: .newlines)
        let container = root + "/docs"
        for path in [container, container + "/chunks"] { #expect(try Self.mode(path) == 0o700, "\(path)") }
        for name in [LocalContainer.markerName, "container.db"] {
            #expect(try Self.mode(container + "/" + name) == 0o600, "\(name)")
        }
        let server = try ServeProcess.start(root: root, umask: "022")
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let chunk = Sample.chunk(Sample.bytes(5000, seed: 77))
            var request = HTTPClientRequest(
                url: "http://127.0.0.1:\(server.port)" + WireProtocol.Path.chunk("docs", chunk.hash))
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(
                name: WireProtocol.chunkEncodingHeader, value: WireProtocol.encodingName(chunk.encoding))
            request.headers.add(name: WireProtocol.plainLengthHeader, value: String(chunk.plainLength))
            request.body = .bytes(ByteBuffer(bytes: chunk.payload))
            let reply = try await ServerFixture.execute(client, request, timeout: .seconds(30))
            #expect(reply.status == 204, "\(reply.text)")
            let shard = container + "/chunks/" + chunk.hash.hex.prefix(2)
            #expect(try Self.mode(shard) == 0o700)
            #expect(try Self.mode(shard + "/" + chunk.hash.hex) == 0o600)
        } catch {
            Issue.record("\(error)")
        }
        try? await client.shutdown()
        #expect(server.stop() == 0, "log:\n\(server.log)")
    }

    /// The permission bits of `path`.
    private static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    private static func get(_ url: String, token: String, _ client: HTTPClient) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        return try await ServerFixture.execute(client, request, timeout: .seconds(30))
    }
}
