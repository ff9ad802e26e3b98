import Foundation
import Glibc
import TestSupport
import Testing

/// Tokens kept in PostgreSQL: `server-init --token` and `token create|list|revoke
/// --database` manage them, every `serve --database` process (without `--tokens`) accepts them,
/// a revocation reaches every process at once, and a hostile client is refused exactly as by the
/// embedded server (`serve --root`). Against the real PostgreSQL and RGW of the test services.
@Suite(.serialized)
struct DatabaseTokensTest {
    @Test func oneTokenOpensTheContainerOnTwoServersAndARevocationReachesBoth() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        backend.tokensInDatabase = true
        let token = try readText(try backend.initialize(container: "box"))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let first = try backend.startServer()
        let second = try backend.startServer()
        for server in [first, second] {
            #expect(try status(port: server.port, container: "box", token: token) == 200, "\(backend.logs())")
        }
        // Only the digest is stored, never the token nor any part of its secret.
        let secret = String(token.dropFirst(4))
        #expect(try backend.value("SELECT count(*) FROM syncfs_tokens") == "1")
        #expect(
            try backend.value(
                "SELECT count(*) FROM syncfs_tokens WHERE strpos(id || digest || container || label, '\(secret.prefix(16))') > 0"
            ) == "0")
        // Nothing was made on the local disk: no token directory, no container directory.
        #expect(!pathExists(backend.tokensDir))

        let list = try backend.syncfs(["token", "list", "--database", backend.databaseURL, "--json"])
        #expect(list.ok && !list.stdout.contains(secret.prefix(16)), "\(list)")
        let records = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]] ?? []
        let id = try #require(records.first?["id"] as? String, "\(list)")
        let revoke = try backend.syncfs(["token", "revoke", "--database", backend.databaseURL, id])
        #expect(revoke.ok, "\(revoke)")
        // Read afresh on every request: refused by both processes from the next request on.
        for server in [first, second] {
            #expect(try status(port: server.port, container: "box", token: token) == 401, "\(backend.logs())")
        }
        let again = try backend.syncfs(["token", "revoke", "--database", backend.databaseURL, id])
        #expect(again.ok && again.stderr.contains("already revoked"), "\(again)")
        let unknown = try backend.syncfs(["token", "revoke", "--database", backend.databaseURL, "0badc0de"])
        #expect(unknown.status == 65, "\(unknown)")
        let both = try backend.syncfs(["token", "list", "--database", backend.databaseURL, "--root", backend.baseDir])
        #expect(both.status == 64, "\(both)")

        // The fixture deletes the bucket server-init made (RGW keeps no leftovers run after run).
        #expect(backend.bucketExists())
        backend.removeBucket()
        #expect(!backend.bucketExists())
    }

    @Test func aHostileClientIsRefusedAsByTheEmbeddedServer() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        backend.tokensInDatabase = true
        _ = try backend.initialize(container: "box")
        let server = try backend.startServer()
        let database = try probes(
            port: server.port, valid: try backend.createToken(container: "box"),
            otherContainer: try backend.createToken(container: "other"),
            revoked: try revokedDatabaseToken(backend))

        let embedded = try ServerProcess.start(root: backend.baseDir + "/embedded/root")
        defer { _ = embedded.stop() }
        let file = { (container: String) throws -> String in
            try readText(try embedded.createToken(container: container)).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let revokedLocal = try file("box")
        let listed = try backend.syncfs(["token", "list", "--root", embedded.root, "--json"])
        let ids = (try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]] ?? [])
            .compactMap { $0["id"] as? String }
        let revoke = try backend.syncfs(["token", "revoke", "--root", embedded.root, try #require(ids.last)])
        #expect(revoke.ok, "\(revoke)")
        let local = try probes(
            port: embedded.port, valid: try file("box"), otherContainer: try file("other"), revoked: revokedLocal)

        #expect(database == local, "database: \(database)\nembedded: \(local)\n\(backend.logs())")
        #expect(database["valid"] == 200 && database["other container"] == 403 && database["revoked"] == 401)
        #expect(database["malformed"] == 401 && database["unknown"] == 401 && database["none"] == 401)
    }

    /// A token for `box` made and revoked through `token … --database`.
    private func revokedDatabaseToken(_ backend: DatabaseBackendFixture) throws -> String {
        let token = try backend.createToken(container: "box", label: "to-revoke")
        let id = try backend.value("SELECT id FROM syncfs_tokens WHERE label = 'to-revoke'")
        let result = try backend.syncfs(["token", "revoke", "--database", backend.databaseURL, id])
        guard result.ok else { throw TestFolderError(message: "revoke failed: \(result)") }
        return token
    }

    /// The status of `GET /v1/containers/box` for each kind of client.
    private func probes(port: Int, valid: String, otherContainer: String, revoked: String) throws -> [String: Int] {
        [
            "valid": try status(port: port, container: "box", token: valid),
            "other container": try status(port: port, container: "box", token: otherContainer),
            "revoked": try status(port: port, container: "box", token: revoked),
            "malformed": try status(port: port, container: "box", token: "sfs_" + String(repeating: "z", count: 64)),
            "unknown": try status(port: port, container: "box", token: "sfs_" + String(repeating: "0", count: 64)),
            "none": try status(port: port, container: "box", token: nil),
            "unknown container": try status(port: port, container: "nobody", token: valid),
        ]
    }

    /// The HTTP status of `GET /v1/containers/NAME` with `token` (curl; the header read from a
    /// private file, never on a command line).
    private func status(port: Int, container: String, token: String?) throws -> Int {
        var arguments = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30"]
        let temporary = try TemporaryDirectory("syncfs-header")
        let header = temporary.path + "/header"
        if let token {
            guard
                FileManager.default.createFile(
                    atPath: header, contents: Data("Authorization: Bearer \(token)\n".utf8),
                    attributes: [.posixPermissions: 0o600])
            else { throw TestFolderError(message: "cannot write \(header)") }
            arguments += ["-H", "@" + header]
        }
        arguments.append("http://127.0.0.1:\(port)/v1/containers/\(container)")
        let result = ModelProcess.run(arguments, timeout: 60)
        guard let code = Int(result.stdout) else { throw TestFolderError(message: "curl failed: \(result)") }
        return code
    }
}
