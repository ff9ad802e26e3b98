import Foundation
import Glibc
import TestSupport
import Testing

/// Observers of every change (doc/SEMANTICS.md, "Observing changes"): `syncfs-mount events` on
/// mount B shows the changes made on mount A (origin remote) and on B itself (origin local), with
/// paths, old paths and one file ID across a rename; a folder filter; and programs watching B
/// with inotify see A's changes, through the inotify echo, which uploads and downloads nothing.
@Suite(.serialized)
struct EventsTest {
    /// Waits until `watcher` printed at least `count` event lines; records an issue otherwise.
    @discardableResult
    private func expectEvents(
        _ watcher: Watcher, count: Int, _ context: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [EventLine] {
        if !waitUntil(timeout: 20, { changes(watcher).count >= count }) {
            Issue.record(
                "\(context): \(changes(watcher).count) of \(count) events:\n\(watcher.output)",
                sourceLocation: sourceLocation)
        }
        return changes(watcher)
    }

    /// The changes `watcher` printed, without the sync rounds' lines (`scan-…`, `synced`).
    private func changes(_ watcher: Watcher) -> [EventLine] {
        EventLine.parse(watcher.lines).filter { !["scan-begin", "scan-end", "synced"].contains($0.kind) }
    }

    @Test func eventsShowRemoteAndLocalChangesWithPathsAndOneIdentity() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let everything = try Watcher.events([b.root, "--timeout", "120"])
            let folder = try Watcher.events([b.root, "dir/", "--timeout", "120"])
            let entry = try Watcher.events([b.root, b.path("g.txt"), "--count", "2", "--timeout", "120"])

            try makeDirectory(a.path("dir"))
            expectEvents(everything, count: 1, "mkdir on A")
            try writeFile(a.path("dir/f.txt"), "v1")
            expectEvents(everything, count: 2, "a new file on A")
            try appendFile(a.path("dir/f.txt"), bytes(" v2"))
            expectEvents(everything, count: 3, "an append on A")
            try posix("rename") { rename(a.path("dir/f.txt"), a.path("g.txt")) }
            expectEvents(everything, count: 4, "a move on A")
            try posix("unlink") { unlink(a.path("g.txt")) }
            expectEvents(everything, count: 5, "a delete on A")
            try writeFile(b.path("local.txt"), "mine")
            let events = expectEvents(everything, count: 7, "a new file on B")

            #expect(
                events.map(\.description) == [
                    "created dir", "created dir/f.txt", "modified dir/f.txt", "renamed g.txt <- dir/f.txt",
                    "deleted g.txt", "created local.txt", "modified local.txt",
                ], "\(everything.output)")
            #expect(events.map { $0.origin ?? "-" } == Array(repeating: "remote", count: 5) + ["local", "local"])
            #expect(events.map { $0.type ?? "-" } == ["directory"] + Array(repeating: "file", count: 6))
            let ids = events.map { $0.fileID ?? "" }
            #expect(ids.allSatisfy { $0.count == 32 }, "file IDs are 32 hex digits: \(ids)")
            #expect(Set(ids[1...4]).count == 1, "one identity from create to delete, across the rename: \(ids)")
            #expect(Set([ids[0], ids[1], ids[5]]).count == 3)
            #expect(events.allSatisfy { $0.time.hasSuffix("Z") && $0.time.count == 24 }, "\(events.map(\.time))")
            #expect(entry.wait(timeout: 30) == 0, "exits 0 after --count events: \(entry.errors)")

            #expect(
                changes(folder).map(\.description) == [
                    "created dir", "created dir/f.txt", "modified dir/f.txt", "renamed g.txt <- dir/f.txt",
                ], "dir/ watches the folder and what is below it, moves out included: \(folder.output)")
            #expect(
                EventLine.parse(entry.lines).map(\.description) == ["renamed g.txt <- dir/f.txt", "deleted g.txt"],
                "an absolute PATH watches that entry (no `synced`: it is for folders): \(entry.output)")
            #expect(folder.stop() == 0 && everything.stop() == 0, "SIGTERM ends a watcher with 0")
        }
    }

    @Test func inotifyWatchersOnBSeeChangesMadeOnA() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let inotify = try Watcher(["inotifywait", "-m", "--format", "%e %f", b.root])
            defer { inotify.stop() }
            #expect(inotify.waitForErrors(containing: "Watches established"), "\(inotify.errors)")
            func expectSeen(_ expected: [String], _ context: String, sourceLocation: SourceLocation = #_sourceLocation)
            {
                let seen = waitUntil(timeout: 20) { expected.allSatisfy(inotify.lines.contains) }
                if !seen {
                    Issue.record(
                        "\(context): expected \(expected) among:\n\(inotify.output)\n\(mounts.logs())",
                        sourceLocation: sourceLocation)
                }
            }

            try writeFile(a.path("w.txt"), "hello")
            expectSeen(["CREATE w.txt", "MODIFY w.txt", "CLOSE_WRITE,CLOSE w.txt"], "a new file written on A")
            #expect(describeState(b.path("w.txt")) == "online", "the echo downloads nothing")
            // A watcher of the file itself: the new content comes with a new inode (the kernel
            // keeps its own size and mtime for one it knows), so it learns the file was replaced.
            let fileWatcher = try Watcher(["inotifywait", "-m", "--format", "%e", b.path("w.txt")])
            defer { fileWatcher.stop() }
            #expect(fileWatcher.waitForErrors(containing: "Watches established"), "\(fileWatcher.errors)")

            try appendFile(a.path("w.txt"), bytes(" world"))
            #expect(
                waitUntil { inotify.lines.filter { $0 == "CLOSE_WRITE,CLOSE w.txt" }.count == 2 }, "\(inotify.output)")
            #expect(describeState(b.path("w.txt")) == "online")
            #expect(waitUntil { fileWatcher.lines.contains("DELETE_SELF") }, "\(fileWatcher.output)")

            // A file B has downloaded: its new content is downloaded with the change and touched.
            #expect(try readText(b.path("w.txt")) == "hello world")
            let closes = inotify.lines.filter { $0 == "CLOSE_NOWRITE,CLOSE w.txt" }.count
            try appendFile(a.path("w.txt"), bytes("!"))
            #expect(
                waitUntil { inotify.lines.filter { $0 == "CLOSE_WRITE,CLOSE w.txt" }.count == 3 }, "\(inotify.output)")
            #expect(try readText(b.path("w.txt")) == "hello world!")
            expectStates([b.path("w.txt")], in: ["local"], "w.txt, read", timeout: markedDownloadedWithin)
            #expect(try mtimeOf(b.path("w.txt")) == mtimeOf(a.path("w.txt")), "the echo changed no mtime")
            // (inotifywait's line for the read just made may still be on its way.)
            #expect(
                waitUntil { inotify.lines.filter { $0 == "CLOSE_NOWRITE,CLOSE w.txt" }.count > closes },
                "\(inotify.output)")

            try posix("chmod") { chmod(a.path("w.txt"), 0o600) }
            expectSeen(["ATTRIB w.txt"], "chmod on A")
            #expect(permissions(try lstatPath(b.path("w.txt"))) == 0o600)

            try posix("rename") { rename(a.path("w.txt"), a.path("v.txt")) }
            expectSeen(["MOVED_FROM w.txt", "MOVED_TO v.txt"], "a rename on A")
            try makeDirectory(a.path("d"))
            expectSeen(["CREATE,ISDIR d"], "mkdir on A")
            try makeSymlink(target: "v.txt", at: a.path("s"))
            expectSeen(["CREATE s"], "a symlink on A")
            try posix("unlink") { unlink(a.path("v.txt")) }
            expectSeen(["DELETE v.txt"], "a delete on A")
            try posix("rmdir") { rmdir(a.path("d")) }
            expectSeen(["DELETE,ISDIR d"], "rmdir on A")
            #expect(!pathExists(b.path("v.txt")) && !pathExists(b.path("d")))
            #expect(try readLink(b.path("s")) == "v.txt")

            // The echo made no local change on B: nothing queued, nothing uploaded, nothing back on A.
            let status = try b.syncStatus()
            #expect(status.pendingEntries == 0 && status.bytesUploaded == 0, "\(status)")
            #expect(try listDirectory(a.root).sorted() == ["s"])
        }
    }

    @Test func withoutTheEchoInotifySeesNoRemoteChangeButEventsDo() throws {
        try SyncedMounts.with(uploadDelay: 20, argumentsB: ["--no-inotify-echo"]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let inotify = try Watcher(["inotifywait", "-m", "--format", "%e %f", b.root])
            defer { inotify.stop() }
            #expect(inotify.waitForErrors(containing: "Watches established"), "\(inotify.errors)")
            let events = try Watcher.events([b.root, "quiet.txt", "--count", "1", "--timeout", "60"])
            try writeFile(a.path("quiet.txt"), "x")
            #expect(events.wait(timeout: 60) == 0, "\(events.output) \(events.errors)")
            #expect(EventLine.parse(events.lines).map(\.description) == ["created quiet.txt"])
            #expect(waitUntil { pathExists(b.path("quiet.txt")) })
            usleep(1_000_000)  // scenario: time for an event that must not come
            #expect(inotify.output.isEmpty, "the kernel emits nothing for invalidations: \(inotify.output)")
            // A local change is seen as always.
            try writeFile(b.path("loud.txt"), "y")
            #expect(waitUntil { inotify.lines.contains("CREATE loud.txt") }, "\(inotify.output)")
        }
    }

    /// The echo thread makes calls on its own mount: killed in the middle of one, the daemon must
    /// still die at once (its echo thread holds no `/dev/fuse` descriptor, so the kernel aborts the
    /// connection once the other threads are gone), and a remount catches up. Each round also
    /// unmounts B while it may still be catching up (a stop in the middle of a feed batch).
    @Test func aDaemonKilledWhileEchoingRemoteChangesDiesAndCatchesUpOnRemount() throws {
        // Bursts are echoed though nothing watches B: the echo is what this test is about.
        try SyncedMounts.with(uploadDelay: 20, argumentsB: ["--inotify-echo-always"]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("many"))
            #expect(waitUntil { pathExists(b.path("many")) })
            for round in 0..<3 {
                // B catches up on a batch at full speed after a restart: its echo is busy all along.
                try b.unmount()
                for index in 0..<600 { try writeFile(a.path("many/r\(round)-\(index)"), "\(index)") }
                #expect(a.expectSync())
                try b.remount()
                _ = waitUntil(timeout: 20) { ((try? listDirectory(b.path("many")).count) ?? 0) > round * 600 + 30 }
                try b.kill9()
                try b.remount()
            }
            expectConverged(mounts, timeout: 60, "after three kills while echoing")
            #expect(try listDirectory(b.path("many")).count == 1800)
        }
    }

    /// An unmount while the echo catches up on remote changes ends the daemon. The echo's call in
    /// flight when the session's loop ends is never answered and keeps its directory locked; the
    /// follower's next entry invalidation for that directory then waited for it in the kernel, and
    /// the daemon never exited (killed, a zombie). Each round unmounts B in the middle of a
    /// catch-up of new folders, which is echo calls back to back. The moment is short: on a
    /// loaded machine this hung in most runs before the fix, on an idle one it rarely did
    /// (`EchoCallExclusionTests` shows the cycle every time).
    @Test func anUnmountWhileEchoingRemoteChangesEndsTheDaemon() throws {
        try SyncedMounts.with(uploadDelay: 20, argumentsB: ["--inotify-echo-always"]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("many"))
            #expect(waitUntil { pathExists(b.path("many")) })
            var interrupted = 0
            for round in 0..<4 {
                try b.unmount()
                // Folders: nothing to download, so B's catch-up is all echo calls.
                for index in 0..<400 { try makeDirectory(a.path("many/u\(round)-\(index)")) }
                #expect(a.expectSync())
                try b.remount()
                let many = b.path("many")
                _ = waitUntil(timeout: 20) { try listDirectory(many).count > round * 400 + 30 }
                if ((try? listDirectory(many).count) ?? 0) < (round + 1) * 400 { interrupted += 1 }
                try b.unmount()
                try b.remount()
            }
            #expect(interrupted > 0, "no unmount came in the middle of a catch-up")
            expectConverged(mounts, timeout: 60, "after four unmounts while echoing")
            #expect(try listDirectory(b.path("many")).count == 1600)
        }
    }

    /// The content touch after a remote edit is `truncate(path, same size)`, which the kernel
    /// carries out on its page cache (cut to the size the daemon answers). A program that opened
    /// the file after the edit and appended to it holds that write in the page cache until it
    /// closes the file: the touch dropped it, and the append was lost without an error (the lost
    /// token of the convergence test; about a third of these appends before the fix). A appends
    /// the moment each edit of B arrives (its name leads to a new inode) and keeps the file open
    /// a moment; every line of A and of B must reach both mounts.
    @Test func anAppendMadeJustAfterARemoteEditSurvivesTheEchosTouch() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("f.txt"), "start\n")
            #expect(waitUntil { try readText(b.path("f.txt")) == "start\n" })
            let editor = PrependingEditor(path: b.path("f.txt"))
            editor.start()
            var appended: [String] = []
            var last = try lstatPath(a.path("f.txt")).st_ino
            for n in 1...30 {
                let deadline = Date().addingTimeInterval(1)
                while Date() < deadline, ((try? lstatPath(a.path("f.txt")).st_ino) ?? last) == last {}
                let line = "A-\(n)"
                let fd = try openFile(a.path("f.txt"), O_WRONLY | O_APPEND)
                do {
                    try writeAll(fd, bytes(line + "\n"))
                    usleep(50_000)  // scenario: a writer holding the file open
                } catch {
                    close(fd)
                    throw error
                }
                try posix("close") { close(fd) }
                appended.append(line)
                usleep(100_000)  // scenario: pacing the writer
                last = (try? lstatPath(a.path("f.txt")).st_ino) ?? last
            }
            let prepended = editor.stop()
            #expect(prepended.count >= 10, "B edited the file \(prepended.count) times")
            #expect(a.expectSync() && b.expectSync())
            guard let tree = expectConverged(mounts, timeout: 60, "after the appends and edits") else { return }
            var lines = Set<String>()
            for (_, entry) in tree.entries {
                guard let content = entry.content else { continue }
                lines.formUnion(String(decoding: content, as: UTF8.self).split(separator: "\n").map(String.init))
            }
            let lost = (appended + prepended).filter { !lines.contains($0) }
            #expect(
                lost.isEmpty, "lost \(lost.count) of \(appended.count) appends and \(prepended.count) edits: \(lost)")
        }
    }

    @Test func theCommandFailsClearlyAndEndsWhenTheDaemonStops() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let binary = try TestFolder.binaryPath()
        let notMounted = ModelProcess.run([binary, "events", folder.baseDir], timeout: 30)
        #expect(notMounted.status == 65, "\(notMounted)")
        let outside = ModelProcess.run([binary, "events", folder.root, "/etc/passwd"], timeout: 30)
        #expect(outside.status == 65 && outside.stderr.contains("outside"), "\(outside)")
        let escaping = ModelProcess.run([binary, "events", folder.root, "../state/"], timeout: 30)
        #expect(escaping.status == 65, "\(escaping)")
        let nothing = ModelProcess.run([binary, "events", folder.root, "--count", "1", "--timeout", "1"], timeout: 30)
        #expect(nothing.status == 75 && nothing.stdout.isEmpty, "\(nothing)")

        let watching = try Watcher.events([folder.root])
        try folder.unmount()
        #expect(watching.wait(timeout: 30) == 75, "the daemon went away: \(watching.errors)")
        #expect(watching.errors.contains("stopped"), "\(watching.errors)")
    }
}

/// Inserts a new line at the top of a file every 50–150 ms, on a thread of its own, holding the
/// file open for writing from the read to the write (as an editor saving in place would).
private final class PrependingEditor: @unchecked Sendable {
    private let path: String
    private let lock = NSLock()
    private var stopped = false
    private var lines: [String] = []
    private let done = DispatchSemaphore(value: 0)

    init(path: String) { self.path = path }

    func start() {
        let thread = Thread { [self] in
            var n = 0
            while !lock.withLock({ stopped }) {
                n += 1
                let line = "B-\(n)"
                if (try? prepend(line)) != nil { lock.withLock { lines.append(line) } }
                usleep(UInt32.random(in: 50_000...150_000))  // scenario: pacing the editor
            }
            done.signal()
        }
        thread.start()
    }

    /// Stops and returns the lines written.
    func stop() -> [String] {
        lock.withLock { stopped = true }
        done.wait()
        return lock.withLock { lines }
    }

    private func prepend(_ line: String) throws {
        try withFile(path, O_RDWR) { fd in
            let old = try readAll(fd)
            try pwriteBytes(fd, bytes(line + "\n") + old, offset: 0)
        }
    }
}
