import Foundation
import Glibc
import TestSupport
import Testing

/// Following a file another machine appends to (doc/SEMANTICS.md, "Following a file
/// another machine changes"), measured with the real tools: `tail -F` on mount B and
/// `inotifywait -m` on B's folder while mount A appends a line at a time.
///
/// What holds today: each remote update gives B's file a new inode (a local writer can never
/// lose bytes to it), so `tail -F` says the file was replaced and prints it again from the start —
/// every line arrives, in order of first appearance, some more than once — and a folder watcher
/// sees the file change once per update. Keeping the inode for pure appends was tried and
/// withdrawn: it raced with local appends under the kernel's writeback cache (the convergence test
/// lost a token).
@Suite(.serialized)
struct TailFollowTest {
    /// Lines appended on A, one at a time, each waited for on B.
    static let appends = 10
    /// Each line must show in `tail -F` on B within this many seconds of its write on A (upload
    /// delay 20 ms, the follower's long poll, one download; well below 1 s on an idle machine).
    static let bound = 10.0

    @Test func tailFollowsRemoteAppendsAndAFolderWatcherSeesEachOne() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("log.txt"), "line 0\n")
            #expect(a.expectSync())
            #expect(waitUntil { try readText(b.path("log.txt")) == "line 0\n" }, "\(mounts.logs())")
            let tail = try Watcher(["tail", "-F", "-n", "+1", "-s", "0.2", b.path("log.txt")])
            defer { tail.stop() }
            #expect(waitUntil { tail.lines == ["line 0"] }, "\(tail.output) \(tail.errors)")
            let inotify = try Watcher(["inotifywait", "-m", "--format", "%e %f", b.root])
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
            let expected = (0...Self.appends).map { "line \($0)" }
            var firstSeen: [String] = []
            for line in tail.lines where !firstSeen.contains(line) { firstSeen.append(line) }
            #expect(firstSeen == expected, "every line, in order of first appearance:\n\(tail.output)")
            let worst = latencies.max() ?? 0
            print(
                "tail -F latency over \(latencies.count) appends: max \(worst) s, "
                    + "median \(latencies.sorted()[latencies.count / 2]) s; \(tail.lines.count) lines printed for "
                    + "\(expected.count); tail said: \(tail.errors.split(separator: "\n").count) notices")
            #expect(worst < Self.bound, "slowest line: \(worst) s (\(latencies))")
            // inotifywait prints on its own time: its line for the last update may trail tail's.
            let changes = { inotify.lines.filter { $0.hasSuffix(" log.txt") } }
            #expect(
                waitUntil(timeout: Self.bound) { changes().count >= Self.appends },
                "a folder watcher sees each update: \(changes())")
            #expect(try readText(b.path("log.txt")) == expected.map { $0 + "\n" }.joined())
            #expect(try b.syncStatus().pendingEntries == 0, "B uploads nothing back")
        }
    }
}
