import Foundation
import Glibc
import TestSupport
import Testing

/// A listed server that lies about the change feed (`mount LIAR,HONEST`; doc/SECURITY.md,
/// "Several servers"): the lying proxy (`LyingProxyProcess`) adds a file to every feed page and
/// shows a real file as deleted. While the mount uses it, `verify` says the server's feed does not
/// hold the tree its digest stands for (exit 75). Once it dies and the mount fails over to the
/// honest server, the mount checks its tree against that server by itself: the made-up file
/// goes, the hidden one comes back, and nothing made up ever reaches the honest server.
@Suite(.serialized)
struct FailoverLiarMountTest {
    @Test func aLyingServerLeftBehindLeavesNothingItMadeUpOrHid() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let server = try ServerProcess.start(root: scratch + "/server")
        defer { _ = server.stop() }
        let token = try server.createToken(container: "box")
        let access = ["--token-file", token]
        let honest = try TestFolder.make(.mount, sharedContainer: server.url("box"), mountArguments: access)
        defer { honest.tearDown() }
        try writeFile(honest.path("hidden.txt"), "a real file the liar hides")
        try writeFile(honest.path("kept.txt"), "a real file")
        #expect(honest.expectSync(timeout: 60))

        let liar = try LyingProxyProcess.start(
            upstreamPort: server.port, injectName: "injected.txt", hideName: "hidden.txt")
        defer { liar.stop() }
        let a = try TestFolder.make(
            .mount, sharedContainer: "\(liar.url("box")),\(server.url("box"))", mountArguments: access)
        defer { a.tearDown() }
        let logs = { "\(a.daemonLog(limit: 20000))\n---- proxy:\n\(liar.log())" }

        // Through the liar: the made-up file shows, the hidden one does not.
        #expect(
            waitUntil(timeout: 60) { pathExists(a.path("injected.txt")) && pathExists(a.path("kept.txt")) }, "\(logs())"
        )
        #expect(!pathExists(a.path("hidden.txt")), "\(logs())")
        // `verify` on the liar: its feed does not give the tree its (honest) digest stands for.
        let onLiar = ModelProcess.run([try TestFolder.binaryPath(), "verify", a.root], timeout: 180)
        #expect(onLiar.status == 75, "\(onLiar)\n\(logs())")
        #expect(onLiar.stdout.contains("may be lying"), "\(onLiar)")

        // The liar dies: after the failover the mount checks its tree against the honest server.
        liar.kill9()
        #expect(
            waitUntil(timeout: 120) {
                !pathExists(a.path("injected.txt"))
                    && (try? readText(a.path("hidden.txt"))) == "a real file the liar hides"
            }, "\(logs())")
        #expect(try readText(a.path("kept.txt")) == "a real file")
        #expect(a.daemonLog(limit: 100_000).contains("removed injected.txt"), "\(logs())")
        let status = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root], timeout: 60)
        #expect(status.stdout.contains("server: \(server.url("box"))"), "\(status)")

        // `verify` now: the tree is the honest server's.
        let verified = ModelProcess.run([try TestFolder.binaryPath(), "verify", a.root], timeout: 180)
        #expect(verified.ok, "\(verified)\n\(logs())")
        #expect(verified.stdout.contains("matches"), "\(verified)")

        // Nothing made up reached the honest server: after the mount's sync, neither the honest
        // mount nor a new mount of the honest server has it, and both have every real file.
        #expect(a.expectSync(timeout: 60), "\(logs())")
        #expect(honest.expectSync(timeout: 60))
        let fresh = try TestFolder.make(.mount, sharedContainer: server.url("box"), mountArguments: access)
        defer { fresh.tearDown() }
        #expect(waitUntil(timeout: 60) { pathExists(fresh.path("kept.txt")) && pathExists(fresh.path("hidden.txt")) })
        #expect(!pathExists(fresh.path("injected.txt")))
        #expect(!pathExists(honest.path("injected.txt")))
        #expect((try? readText(honest.path("hidden.txt"))) == "a real file the liar hides")
    }

    /// A fresh temporary directory for the server.
    private static func scratch() throws -> String {
        return try makeTemporaryDirectory("syncfs-tests")
    }
}
