import Foundation
import Glibc
import TestSupport
import Testing

/// A storage quota on the server (`serve --quota`; doc/SEMANTICS.md "Quotas"), seen from a mount:
/// a file that does not fit stays queued, `status` says why (the server's message), nothing is
/// lost; once the quota is raised it goes up by itself and another mount reads it whole.
@Suite(.serialized)
struct QuotaMountTest {
    @Test(arguments: MountServerBackend.allCases) func aChangeOverTheQuotaWaitsQueuedAndGoesOnceThereIsRoom(
        backend: MountServerBackend
    ) throws {
        let base = try makeTemporaryDirectory("syncfs-quota")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(
            root: base + "/server", backend: backend, serveArguments: ["--quota", "box=64K"])
        defer { server.tearDown() }
        let token = try server.createToken(container: "box")
        let access = ["--upload-delay", "20", "--token-file", token]
        let a = try TestFolder.make(.mount, sharedContainer: server.url("box"), mountArguments: access)
        defer { a.tearDown() }

        try writeFile(a.path("small.txt"), "fits")
        #expect(a.expectSync())
        let big = try randomBytes(1 << 20)
        try writeFile(a.path("big.bin"), big)
        var said = ""
        let refused = waitUntil(timeout: 60) {
            let status = try a.syncStatus()
            said = ([status.lastContainerError ?? ""] + status.failing.map(\.reason)).joined(separator: " | ")
            return status.pendingEntries >= 1 && said.contains("over its quota")
        }
        #expect(refused, "status says the quota holds the file: \(said)\n\(a.daemonLog())")
        #expect(try readFile(a.path("big.bin")) == big, "the file stays whole here")

        server.serveArguments = ["--quota", "box=100M"]
        try server.restart()
        #expect(a.expectSync(timeout: 120), "the queued file goes once there is room")
        let b = try TestFolder.make(.mount, sharedContainer: server.url("box"), mountArguments: access)
        defer { b.tearDown() }
        #expect(try readFile(b.path("big.bin")) == big)
        #expect(try readText(b.path("small.txt")) == "fits")
    }
}
