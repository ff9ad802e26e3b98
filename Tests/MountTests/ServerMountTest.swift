import Foundation
import Glibc
import TestSupport
import Testing

/// Mounts that sync through the HTTP server (`syncfs-mount serve`): two mounts with
/// separate state directories converge through it; stopping and restarting the server loses
/// nothing queued on either side; wrong tokens and URLs are clear errors at mount time.
///
/// Every test runs on both server backends (`MountServerBackend`: the embedded `--root` and
/// PostgreSQL + S3, `--database … --chunk-store s3://…`) and asserts the same things on each; what
/// the server holds is looked at from its side with `ServerProcess.holdsContainer`/`entryCount`.
///
/// Like SyncTwoMountsTest, these have no plain-directory counterpart: syncing through a server is
/// a SyncFS notion. (What a mount does locally does not depend on its container; the POSIX suites
/// cover it.)
@Suite(.serialized)
struct ServerMountTest {
    @Test(arguments: MountServerBackend.allCases) func twoMountsConvergeThroughTheServer(backend: MountServerBackend)
        throws
    {
        try SyncedMounts.with(uploadDelay: 20, overServer: true, backend: backend) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("docs"))
            try writeFile(a.path("docs/note.txt"), "from A")
            let large = try randomBytes(6 << 20)
            try writeFile(a.path("docs/large.bin"), large)
            try posix("symlink") { symlink("docs/note.txt", a.path("link")) }
            #expect(waitUntil(timeout: 30) { try readText(b.path("docs/note.txt")) == "from A" }, "\(mounts.logs())")
            #expect(waitUntil(timeout: 30) { try readFile(b.path("docs/large.bin")) == large }, "\(mounts.logs())")

            try writeFile(b.path("docs/note.txt"), "edited on B")
            try posix("rename") { rename(b.path("docs"), b.path("papers")) }
            try posix("chmod") { chmod(b.path("papers/large.bin"), 0o600) }
            #expect(
                waitUntil(timeout: 30) { try readText(a.path("papers/note.txt")) == "edited on B" }, "\(mounts.logs())")
            let tree = expectConverged(mounts, timeout: 30, "after changes on both sides")
            #expect(tree?.names == ["", "link", "papers", "papers/large.bin", "papers/note.txt"])
            // The server holds the container: a directory of its own under its root, or its row.
            #expect(try #require(mounts.server).holdsContainer("box"))
            #expect(try #require(mounts.server).entryCount("box", liveOnly: true) == 4)
        }
    }

    @Test(arguments: MountServerBackend.allCases) func mountsSyncOverHTTPSTrustingOnlyTheGivenCertificate(
        backend: MountServerBackend
    ) throws {
        try SyncedMounts.with(uploadDelay: 20, overTLS: true, backend: backend) { mounts in
            let server = try #require(mounts.server)
            #expect(server.url("box").hasPrefix("https://"))
            try writeFile(mounts.a.path("secret.txt"), "over TLS")
            #expect(
                waitUntil(timeout: 30) { try readText(mounts.b.path("secret.txt")) == "over TLS" }, "\(mounts.logs())")

            // Without --ca-file the system's roots do not trust the self-signed certificate: a
            // first mount is refused, saying so (MessagesMountTest checks the message).
            let state = mounts.baseDir + "/state-untrusted"
            let mountpoint = mounts.baseDir + "/untrusted"
            try makeDirectory(mountpoint)
            let token = server.root + "/../token-box-test"
            let untrusted = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", server.url("box"), mountpoint, "--state-dir", state,
                    "--token-file", token,
                ], timeout: 60)
            if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) }
            #expect(untrusted.status == 65, "\(untrusted)")
            #expect(untrusted.stderr.contains("--ca-file"), "\(untrusted)")
        }
    }

    @Test(arguments: MountServerBackend.allCases) func aServerRestartLosesNothingQueuedOnEitherSide(
        backend: MountServerBackend
    ) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: true, backend: backend) { mounts in
            let server = try #require(mounts.server)
            try writeFile(mounts.a.path("before.txt"), "before")
            #expect(
                waitUntil(timeout: 30) { try readText(mounts.b.path("before.txt")) == "before" }, "\(mounts.logs())")

            #expect(server.stop() == 0, "the server did not exit 0 on SIGTERM: \(server.log())")
            for index in 0..<10 { try writeFile(mounts.a.path("a-\(index).txt"), "A \(index)") }
            for index in 0..<5 { try writeFile(mounts.b.path("b-\(index).txt"), "B \(index)") }
            try posix("unlink") { unlink(mounts.b.path("before.txt")) }
            usleep(1_500_000)  // both mounts try (and fail) to upload while the server is down
            #expect(!pathExists(mounts.b.path("a-0.txt")))

            try server.restart()
            #expect(
                waitUntil(timeout: 40) { try readText(mounts.b.path("a-9.txt")) == "A 9" }, "\(mounts.logs())")
            let tree = expectConverged(mounts, timeout: 40, "after the server came back")
            let expected = (0..<10).map { "a-\($0).txt" } + (0..<5).map { "b-\($0).txt" }
            #expect(tree?.names == ([""] + expected).sorted())
            for index in 0..<5 { #expect(try readText(mounts.a.path("b-\(index).txt")) == "B \(index)") }
        }
    }

    /// What the server acknowledged survives its sudden death: `sync` returns only once the
    /// server answered every commit, and a SIGKILL right after loses none of them.
    @Test(arguments: MountServerBackend.allCases) func aKilledServerLosesNothingItAcknowledged(
        backend: MountServerBackend
    ) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: true, backend: backend) { mounts in
            let server = try #require(mounts.server)
            let payload = try randomBytes(3 << 20)
            for index in 0..<20 { try writeFile(mounts.a.path("f\(index).txt"), "file \(index)") }
            try writeFile(mounts.a.path("big.bin"), payload)
            #expect(mounts.a.expectSync(timeout: 60))
            server.kill9()
            // Straight from the dead server's store (its disk, or the database): every acknowledged
            // entry is there.
            #expect(try server.entryCount("box", liveOnly: true) == 21)
            try server.restart()
            #expect(
                waitUntil(timeout: 40) { try readFile(mounts.b.path("big.bin")) == payload }, "\(mounts.logs())")
            let tree = expectConverged(mounts, timeout: 40, "after the server was killed and restarted")
            #expect(tree?.names == ([""] + (0..<20).map { "f\($0).txt" } + ["big.bin"]).sorted())
        }
    }

    @Test(arguments: MountServerBackend.allCases) func aLaterMountStartsOfflineAndNeverSyncsWithAReplacedContainer(
        backend: MountServerBackend
    ) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: true, backend: backend) { mounts in
            let server = try #require(mounts.server)
            try writeFile(mounts.a.path("kept.txt"), "kept")
            #expect(waitUntil(timeout: 30) { try readText(mounts.b.path("kept.txt")) == "kept" }, "\(mounts.logs())")

            // Offline start: the server is down, the mount comes up from its state.
            try mounts.a.unmount()
            server.stop()
            try mounts.a.remount()
            #expect(try readText(mounts.a.path("kept.txt")) == "kept")
            try writeFile(mounts.a.path("offline.txt"), "written offline")
            try mounts.a.unmount()

            // The container under the name is replaced (a new ID) behind the mounts' backs.
            try server.removeContainer("box")
            _ = try server.createToken(container: "box", label: "again")
            #expect(try server.holdsContainer("box"))
            try server.restart()
            #expect(throws: TestFolderError.self, "a mount recorded for the old container must be refused") {
                try mounts.a.remount()
            }
            #expect(mounts.a.daemonLog().contains("belongs to container"), "\(mounts.a.daemonLog())")

            // B, still mounted, must neither take the empty new container for deletions nor upload
            // into it: it stays offline with its files.
            try writeFile(mounts.b.path("from-b.txt"), "B after the swap")
            usleep(2_000_000)  // scenario: time for an upload that must not happen
            #expect(try readText(mounts.b.path("kept.txt")) == "kept")
            let count = try server.entryCount("box", liveOnly: false)
            #expect(count == 0, "B synced into the replaced container: \(count)\n\(mounts.logs())")
        }
    }

    /// `serve --lifeline` (what these tests start): a test runner that dies takes its servers along.
    @Test(arguments: MountServerBackend.allCases) func aServerStopsGracefullyWhenItsLifelineCloses(
        backend: MountServerBackend
    ) throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(root: base + "/server", backend: backend)
        defer { server.tearDown() }
        let status = server.dropLifeline()
        #expect(status == 0, "exit status \(status.map(TestFolder.describe) ?? "none: still running after 10 s")")
    }

    @Test(arguments: MountServerBackend.allCases) func wrongTokensAndURLsAreClearErrorsAtMountTime(
        backend: MountServerBackend
    ) throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(root: base + "/server", backend: backend)
        defer { server.tearDown() }
        let token = try server.createToken(container: "box")
        let wrongToken = base + "/wrong-token"
        try writeFile(wrongToken, "sfs_" + String(repeating: "0", count: 64) + "\n")
        try makeDirectory(base + "/mnt")

        func mount(_ url: String, _ extra: [String]) throws -> ModelProcessResult {
            let result = ModelProcess.run(
                [try TestFolder.binaryPath(), "mount", url, base + "/mnt", "--state-dir", base + "/state-\(UUID())"]
                    + extra, timeout: 60)
            if TestFolder.isMounted(base + "/mnt") {
                _ = ModelProcess.run([try TestFolder.binaryPath(), "unmount", base + "/mnt"], timeout: 60)
                if TestFolder.isMounted(base + "/mnt") { TestFolder.lazyUnmount(base + "/mnt") }
            }
            return result
        }

        let wrong = try mount(server.url("box"), ["--token-file", wrongToken])
        #expect(wrong.status == 65, "\(wrong)")
        #expect(wrong.stderr.contains("refused the token"), "\(wrong)")

        let unknown = try mount(server.url("nobox"), ["--token-file", token])
        #expect(unknown.status == 65, "\(unknown)")
        #expect(unknown.stderr.contains("refused the token"), "a token for box is not valid for nobox: \(unknown)")

        let other = try server.createToken(container: "other")
        try server.removeContainer("other")
        let missing = try mount(server.url("other"), ["--token-file", other])
        #expect(missing.status == 65, "\(missing)")
        #expect(missing.stderr.contains("has no container"), "\(missing)")

        let noToken = try mount(server.url("box"), [])
        #expect(noToken.status == 64, "\(noToken)")
        #expect(noToken.stderr.contains("--token-file"), "\(noToken)")

        let badURL = try mount("http://127.0.0.1:\(server.port)/../etc", ["--token-file", token])
        #expect(badURL.status == 64, "\(badURL)")

        let nobody = try mount("http://127.0.0.1:1/box", ["--token-file", token])
        #expect(nobody.status == 75, "\(nobody)")
        #expect(nobody.stderr.contains("cannot reach"), "\(nobody)")

        // The right token mounts.
        let good = ModelProcess.run(
            [
                try TestFolder.binaryPath(), "mount", server.url("box"), base + "/mnt", "--state-dir", base + "/state",
                "--token-file", token,
            ], timeout: 60)
        defer {
            _ = ModelProcess.run([(try? TestFolder.binaryPath()) ?? "", "unmount", base + "/mnt"], timeout: 60)
            if TestFolder.isMounted(base + "/mnt") { TestFolder.lazyUnmount(base + "/mnt") }
        }
        #expect(good.ok, "\(good)")
        #expect(TestFolder.isMounted(base + "/mnt"))
    }
}
