import Foundation
import Glibc
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

            let binary = try TestFolder.binaryPath()
            let listed = ModelProcess.run([binary, "token", "list", "--root", server.root, "--json"], timeout: 60)
            let ids = (try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]] ?? [])
                .compactMap { $0["id"] as? String }
            try #require(ids.count == 1, "\(listed)")
            let revoked = ModelProcess.run([binary, "token", "revoke", "--root", server.root, ids[0]], timeout: 60)
            try #require(revoked.ok, "\(revoked)")
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
        }
    }
}
