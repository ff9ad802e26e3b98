import Foundation
import Glibc
import Testing

/// Following a file another machine appends to (issue #15; doc/SEMANTICS.md, "Following a file
/// another machine changes"): `tail -F` and `inotifywait -m FILE` on mount B while mount A
/// appends a line at a time. Before, each remote update gave B's file a new inode: `tail -F`
/// said the file was replaced and printed it again from the start (repeated lines), and a
/// watcher of the file got IN_DELETE_SELF and nothing more.
@Suite(.serialized)
struct TailFollowTest {
    /// Lines appended on A, one at a time, each waited for on B.
    static let appends = 15
    /// Each line must show in `tail -F` on B within this many seconds of its write on A (upload
    /// delay 20 ms, the follower's long poll, one download; measured well below 1 s idle).
    static let bound = 10.0

    @Test func tailAndInotifywaitFollowRemoteAppendsOnOneInode() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("log.txt"), "line 0\n")
            #expect(a.expectSync())
            #expect(waitUntil { try readText(b.path("log.txt")) == "line 0\n" }, "\(mounts.logs())")
            let inode = try lstatPath(b.path("log.txt")).st_ino
            let tail = try Watcher(["tail", "-F", "-n", "+1", "-s", "0.2", b.path("log.txt")])
            defer { tail.stop() }
            #expect(waitUntil { tail.lines == ["line 0"] }, "\(tail.output) \(tail.errors)")
            let inotify = try Watcher(["inotifywait", "-m", "--format", "%e", b.path("log.txt")])
            defer { inotify.stop() }
            #expect(inotify.waitForErrors(containing: "Watches established"), "\(inotify.errors)")

            var latencies: [Double] = []
            for n in 1...Self.appends {
                let started = Date()
                try appendFile(a.path("log.txt"), bytes("line \(n)\n"))
                let seen = waitUntil(timeout: 30) { tail.lines.contains("line \(n)") }
                latencies.append(Date().timeIntervalSince(started))
                if !seen {
                    Issue.record(
                        "line \(n) never reached tail -F on B:\n\(tail.output)\n\(tail.errors)\n\(mounts.logs())")
                    break
                }
            }
            usleep(500_000)
            let expected = (0...Self.appends).map { "line \($0)" }
            #expect(tail.lines == expected, "every line once, in order:\n\(tail.output)\n\(tail.errors)")
            #expect(!tail.errors.contains("replaced"), "tail -F saw a new file: \(tail.errors)")
            #expect(try lstatPath(b.path("log.txt")).st_ino == inode, "the same inode on B")
            #expect(
                waitUntil { try mtimeOf(b.path("log.txt")) == mtimeOf(a.path("log.txt")) },
                "B shows the container's mtime, not the time of the echo")
            let worst = latencies.max() ?? 0
            print(
                "tail -F latency over \(latencies.count) appends: max \(worst) s, median \(latencies.sorted()[latencies.count / 2]) s"
            )
            #expect(worst < Self.bound, "slowest line: \(worst) s (\(latencies))")

            let events = inotify.lines
            #expect(events.filter { $0.contains("MODIFY") }.count >= Self.appends, "IN_MODIFY per append: \(events)")
            #expect(!events.contains { $0.contains("DELETE_SELF") || $0.contains("IGNORED") }, "\(events)")
            #expect(try readText(b.path("log.txt")) == expected.map { $0 + "\n" }.joined())
            #expect(try b.syncStatus().pendingEntries == 0, "B uploads nothing back")
        }
    }
}
