import Foundation
import Glibc
import TestSupport
import Testing

/// Bursts of remote changes and the inotify echo (doc/SEMANTICS.md, "inotify"): a catch-up of
/// hundreds of new files skips the echo while no process watches the mount, and is echoed whole,
/// every file seen, while `inotifywait` watches it.
@Suite(.serialized)
struct EchoBurstTest {
    private static let burst = 200

    @Test func aBurstIsEchoedWhileWatchedAndAppliedDirectlyOtherwise() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("burst"))
            #expect(waitUntil { pathExists(b.path("burst")) })

            // Nothing watches B: its catch-up is applied without the echo. (Paused, not unmounted:
            // a remount's catch-up could end before its echo starts, and then nothing is skipped.)
            try b.expectCommand(["pause", b.root])
            for index in 0..<Self.burst { try writeFile(a.path("burst/quiet-\(index)"), "\(index)") }
            #expect(a.expectSync())
            var logStart = logSize(b)
            try b.expectCommand(["resume", b.root])
            #expect(
                waitUntil(timeout: 30) { try listDirectory(b.path("burst")).count == Self.burst },
                "\(mounts.logs())")
            #expect(
                log(of: b, since: logStart).contains("no process watches the mount, so no inotify echo"),
                "\(log(of: b, since: logStart))")

            // inotifywait watches B's folder before B reads the next burst: every file is echoed.
            try b.expectCommand(["pause", b.root])
            for index in 0..<Self.burst { try writeFile(a.path("burst/seen-\(index)"), "\(index)") }
            #expect(a.expectSync())
            let inotify = try Watcher(["inotifywait", "-m", "--format", "%e %f", b.path("burst")])
            defer { inotify.stop() }
            #expect(inotify.waitForErrors(containing: "Watches established"), "\(inotify.errors)")
            logStart = logSize(b)
            try b.expectCommand(["resume", b.root])
            let expected = Set((0..<Self.burst).map { "CREATE seen-\($0)" })
            let seen = waitUntil(timeout: 60) { expected.isSubset(of: Set(inotify.lines)) }
            let missing = expected.subtracting(inotify.lines)
            #expect(seen, "\(missing.count) of \(Self.burst) creates not seen, e.g. \(missing.sorted().prefix(3))")
            #expect(!log(of: b, since: logStart).contains("no inotify echo"), "\(log(of: b, since: logStart))")
        }
    }

    private func logSize(_ folder: TestFolder) -> Int {
        Int((try? lstatPath(folder.logPath).st_size) ?? 0)
    }

    private func log(of folder: TestFolder, since offset: Int) -> String {
        String(
            decoding: (FileManager.default.contents(atPath: folder.logPath) ?? Data()).dropFirst(offset), as: UTF8.self)
    }
}
