import Foundation
import Glibc
import TestSupport
import Testing

/// A mount reads its token file again when the server refuses its token (doc/SECURITY.md,
/// "A mount's token file"): a revoked token replaced in the same file is taken without a remount.
@Suite(.serialized)
struct TokenReloadTest {
    @Test func aRevokedTokenReplacedInTheSameFileIsTakenWithoutARemount() throws {
        try SyncedMounts.with(overServer: true) { mounts in
            let server = try #require(mounts.server)
            let arguments = mounts.a.mountArguments
            let tokenFile = try #require(arguments.firstIndex(of: "--token-file").map { arguments[$0 + 1] })
            try writeFile(mounts.a.path("before.txt"), "before\n")
            try #require(waitUntil { try readText(mounts.b.path("before.txt")) == "before\n" }, "\(mounts.logs())")

            try revokeAll(server)
            // The new token goes into the same file, in place (its mode stays 0600).
            let renewed = try readText(try server.createToken(container: "box", label: "renewed"))
            let file = try openFile(tokenFile, O_WRONLY | O_TRUNC)
            defer { close(file) }
            try writeAll(file, bytes(renewed))

            try writeFile(mounts.a.path("after.txt"), "after\n")
            #expect(
                waitUntil(timeout: 30) { try readText(mounts.b.path("after.txt")) == "after\n" }, "\(mounts.logs())")
            let log = mounts.a.daemonLog(limit: 20_000)
            #expect(log.contains("read the token file ") && log.contains("/token-box-test again"), "\(mounts.logs())")

            // A token file others can write is not trusted: the old token stays until it is fixed.
            try revokeAll(server)
            let third = try readText(try server.createToken(container: "box", label: "third"))
            try posix("ftruncate") { ftruncate(file, 0) }
            try pwriteBytes(file, bytes(third), offset: 0)
            try posix("chmod") { chmod(tokenFile, 0o666) }
            try writeFile(mounts.a.path("third.txt"), "third\n")
            try #require(
                waitUntil(timeout: 30) {
                    mounts.a.daemonLog(limit: 20_000).contains("cannot be read again: others can write it (mode 666)")
                }, "\(mounts.logs())")
            #expect(!pathExists(mounts.b.path("third.txt")), "uploaded with an untrusted token file")
            try posix("chmod") { chmod(tokenFile, 0o600) }
            #expect(
                waitUntil(timeout: 60) { try readText(mounts.b.path("third.txt")) == "third\n" }, "\(mounts.logs())")
        }
    }

    /// Revokes every valid token of the server (`token list`, `token revoke`).
    private func revokeAll(_ server: ServerProcess) throws {
        let binary = try TestFolder.binaryPath()
        let listed = ModelProcess.run([binary, "token", "list", "--root", server.root, "--json"], timeout: 60)
        let tokens = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]] ?? []
        for token in tokens where token["revoked"] == nil {
            let id = try #require(token["id"] as? String, "\(listed)")
            let revoked = ModelProcess.run([binary, "token", "revoke", "--root", server.root, id], timeout: 60)
            try #require(revoked.ok, "\(revoked)")
        }
    }
}
