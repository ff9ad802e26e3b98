import Foundation
import Glibc
import Testing

/// Mounts that sync through the HTTP server (`syncfs-mount serve`, issue #6): two mounts with
/// separate state directories converge through it; stopping and restarting the server loses
/// nothing queued on either side; wrong tokens and URLs are clear errors at mount time.
///
/// Like SyncTwoMountsTest, these have no plain-directory counterpart: syncing through a server is
/// a SyncFS notion. (What a mount does locally does not depend on its container; the POSIX suites
/// cover it.)
@Suite(.serialized)
struct ServerMountTest {
    @Test func twoMountsConvergeThroughTheServer() throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: true) { mounts in
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
            // The server holds the container: a directory of its own under its root.
            #expect(pathExists(mounts.containerPath + "/syncfs-container.json"))
        }
    }

    @Test func aServerRestartLosesNothingQueuedOnEitherSide() throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: true) { mounts in
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

    @Test func wrongTokensAndURLsAreClearErrorsAtMountTime() throws {
        var template = Array("/tmp/syncfs-tests-XXXXXX".utf8CString)
        let base = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(root: base + "/server")
        defer { server.stop() }
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
        #expect(unknown.status == 65 || unknown.status == 1, "\(unknown)")
        #expect(!unknown.ok)

        let noToken = try mount(server.url("box"), [])
        #expect(noToken.status == 64, "\(noToken)")
        #expect(noToken.stderr.contains("--token-file"), "\(noToken)")

        let badURL = try mount("http://127.0.0.1:\(server.port)/../etc", ["--token-file", token])
        #expect(badURL.status == 64, "\(badURL)")

        let nobody = try mount("http://127.0.0.1:1/box", ["--token-file", token])
        #expect(nobody.status == 1, "\(nobody)")
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
