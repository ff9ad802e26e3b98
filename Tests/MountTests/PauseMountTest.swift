import Foundation
import Glibc
import TestSupport
import Testing

/// Pausing a mount (doc/SEMANTICS.md, "Pausing a mount"): on mounts A and B of one container,
/// locally and through `serve`, with a third mount C that is never paused as the witness that
/// a change had time to travel. A paused mount sends nothing and reads no remote change until
/// `resume`, says so in `status`, `events` and `sync`, stays paused across an unmount, resumes by
/// itself at the end of `--for`, and with `--all` fails a placeholder's read as offline.
@Suite(.serialized)
struct PauseMountTest {
    /// `status --json`, the fields of a pause.
    struct PauseStatus: Decodable {
        struct Paused: Decodable {
            var until: String?
            var all: Bool
        }

        var paused: Paused?
        var pendingEntries: Int
        var upToDate: Bool?
    }

    /// A third mount of the mounts' container (through their server, if they use one).
    private func witness(_ mounts: SyncedMounts) throws -> TestFolder {
        var arguments = ["--upload-delay", "20"]
        var location = mounts.containerPath
        if let server = mounts.server {
            arguments += ["--token-file", try server.createToken(container: "box")]
            location = server.url("box")
        }
        return try TestFolder.make(.mount, sharedContainer: location, mountArguments: arguments)
    }

    private func pauseStatus(_ folder: TestFolder) throws -> PauseStatus { try folder.statusJSON(of: folder.root) }

    @Test(arguments: [false, true]) func aPausedMountSendsNothingUntilResumed(overServer: Bool) throws {
        try SyncedMounts.with(overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let c = try witness(mounts)
            defer { c.tearDown() }
            let events = try Watcher.events([a.root, "--timeout", "120"])
            defer { events.stop() }
            #expect(events.waitForErrors(containing: "watching"), "\(events.errors)")
            let paused = try a.expectCommand(["pause", a.root])
            #expect(paused.stdout.contains("paused; 0 changes queued"), "\(paused)\n\(paused.stdout)")
            try writeFile(a.path("held.txt"), "from A while paused")
            try writeFile(c.path("marker.txt"), "from C")
            #expect(waitUntil(timeout: 30) { try readText(b.path("marker.txt")) == "from C" }, "\(mounts.logs())")
            #expect(!pathExists(b.path("held.txt")), "a paused mount sent a change")
            let status = try pauseStatus(a)
            #expect(status.paused != nil && status.paused?.all == false && status.paused?.until == nil)
            #expect(status.pendingEntries == 1 && status.upToDate == false, "\(status)")
            let human = try a.expectCommand(["status", a.root])
            #expect(human.stdout.hasPrefix("\(a.root): paused, 1 change waiting"), "\(human.stdout)")
            let sync = try a.runSync()
            #expect(sync.status == 75, "sync on a paused mount: \(sync)")
            #expect(sync.stderr.contains("paused") && sync.stderr.contains("syncfs-mount resume"), "\(sync.stderr)")
            let resumed = try a.expectCommand(["resume", a.root])
            #expect(resumed.stdout.hasSuffix("resumed\n"), "\(resumed.stdout)")
            #expect(
                waitUntil(timeout: 30) { try readText(b.path("held.txt")) == "from A while paused" },
                "\(mounts.logs())")
            #expect(waitUntil(timeout: 30) { try pauseStatus(a).upToDate == true })
            let again = try a.expectCommand(["resume", a.root])
            #expect(again.stdout.hasSuffix("was not paused\n"), "\(again.stdout)")
            func pauseKinds() -> [String] {
                EventLine.parse(events.lines).map(\.kind).filter { $0 == "paused" || $0 == "resumed" }
            }
            #expect(waitUntil { pauseKinds() == ["paused", "resumed"] }, "\(events.output)")
        }
    }

    @Test(arguments: [false, true]) func aPausedMountReadsNoRemoteChangeUntilResumed(overServer: Bool) throws {
        try SyncedMounts.with(overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let c = try witness(mounts)
            defer { c.tearDown() }
            try a.expectCommand(["pause", a.root])
            try writeFile(b.path("remote.txt"), "from B")
            #expect(b.expectSync())
            #expect(waitUntil(timeout: 30) { try readText(c.path("remote.txt")) == "from B" }, "\(mounts.logs())")
            #expect(waitUntil(timeout: 30) { try pauseStatus(b).upToDate == true })
            #expect(!pathExists(a.path("remote.txt")), "a paused mount read the feed")
            try a.expectCommand(["resume", a.root])
            #expect(waitUntil(timeout: 30) { try readText(a.path("remote.txt")) == "from B" }, "\(mounts.logs())")
        }
    }

    @Test(arguments: [false, true]) func aPauseSurvivesAnUnmountAndEndsByItself(overServer: Bool) throws {
        try SyncedMounts.with(overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let before = try Watcher.events([a.root, "--timeout", "120"])
            defer { before.stop() }
            #expect(before.waitForErrors(containing: "watching"), "\(before.errors)")
            let cursor = try #require(before.errors.split(separator: "(cursor ").last?.split(separator: ")").first)
            try a.expectCommand(["pause", a.root])
            try writeFile(a.path("queued.txt"), "queued while paused")
            // `unmount` does not upload a paused mount's queue, and says so.
            let unmounted = try a.expectCommand(["unmount", a.root])
            #expect(
                unmounted.stderr.contains("the mount is paused") && unmounted.stderr.contains("stay queued"),
                "\(unmounted.stderr)")
            try a.unmount()
            try a.remount()
            let restarted = try pauseStatus(a)
            #expect(restarted.paused != nil && restarted.pendingEntries == 1, "still paused after a restart")
            #expect(!pathExists(b.path("queued.txt")))
            // The journal replays the pause across the restart like any other event.
            // (By kind: a `synced` or scan event may come before it.)
            let replay = try Watcher.events([a.root, "--since", String(cursor), "--timeout", "60"])
            defer { replay.stop() }
            #expect(
                waitUntil(timeout: 30) { EventLine.parse(replay.lines).contains { $0.kind == "paused" } },
                "\(replay.output)")
            let events = try Watcher.events([a.root, "--timeout", "120"])
            defer { events.stop() }
            #expect(events.waitForErrors(containing: "watching"), "\(events.errors)")
            // An end is shown (an hour away: no race with the clock)…
            let later = try a.expectCommand(["pause", a.root, "--for", "1h"])
            #expect(later.stdout.contains("paused (until "), "\(later.stdout)")
            #expect(try pauseStatus(a).paused?.until != nil)
            // …and a short pause replacing it ends by itself.
            try a.expectCommand(["pause", a.root, "--for", "2s"])
            #expect(
                waitUntil(timeout: 30) { try readText(b.path("queued.txt")) == "queued while paused" },
                "resumed by itself\n\(mounts.logs())")
            #expect(try pauseStatus(a).paused == nil)
            #expect(
                waitUntil { EventLine.parse(events.lines).contains { $0.kind == "resumed" } }, "\(events.output)")
        }
    }

    @Test(arguments: [false, true]) func pauseAllFailsAPlaceholderReadAsOffline(overServer: Bool) throws {
        try SyncedMounts.with(overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let content = [UInt8](repeating: 0x61, count: 300_000)
            try writeFile(b.path("big.bin"), content)
            #expect(b.expectSync())
            #expect(waitUntil(timeout: 30) { try syncfsState(a.path("big.bin")) == "online" }, "\(mounts.logs())")
            try a.expectCommand(["pause", a.root, "--all"])
            #expect(try pauseStatus(a).paused?.all == true)
            // `download` fails at once: nothing can come until `resume`.
            let started = Date()
            let download = try a.expectCommand(["download", a.path("big.bin")], status: 75)
            #expect(download.stderr.contains("paused"), "\(download.stderr)")
            #expect(Date().timeIntervalSince(started) < 8, "download waited on a mount paused with --all")
            switch timedRead(a.path("big.bin"), count: 4096, deadline: 20) {
            case .failed(let code, let seconds):
                #expect(code == ENETDOWN, "a read while all transfers are paused: \(placeholderErrnoName(code))")
                #expect(seconds < 2, "it failed after \(seconds) s, not at once")
            case .bytes(let bytes, _): Issue.record("read \(bytes.count) bytes while all transfers are paused")
            case .blocked: Issue.record("the read hung while all transfers are paused")
            }
            // The failed download ends just after its reader got the error.
            #expect(
                waitUntil { try syncfsState(a.path("big.bin")) == "online" },
                "the file stays a placeholder, not failed: \(describeState(a.path("big.bin")))\n\(a.daemonLog())")
            // Uploads and the feed only: a read downloads.
            try a.expectCommand(["pause", a.root])
            #expect(try readFile(a.path("big.bin")) == content)
            try a.expectCommand(["resume", a.root])
        }
    }

    /// SIGTERM (systemd's stop) does not upload a paused mount's queue: it says so, and the next
    /// mount is still paused with the queue.
    @Test func aStopSignalLeavesAPausedMountsQueue() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        try folder.expectCommand(["pause", folder.root])
        try writeFile(folder.path("kept.txt"), "kept for later")
        let pid = try #require(folder.daemonPID)
        #expect(kill(pid, SIGTERM) == 0)
        try #require(
            waitUntil(timeout: 45) { !DaemonExitTest.isRunning(pid) }, "the daemon did not exit\n\(folder.daemonLog())")
        try folder.unmount()
        let log = folder.daemonLog()
        #expect(
            log.contains("stopping on SIGTERM: the mount is paused, nothing is uploaded (1 queued change kept"),
            "\(log)")
        // Another mount of the container does not have the file; this one, mounted again, still
        // holds it queued and paused.
        let other = try TestFolder.make(.mount, sharedContainer: folder.containerPath)
        defer { other.tearDown() }
        #expect(!pathExists(other.path("kept.txt")))
        try folder.remount()
        let status = try pauseStatus(folder)
        #expect(status.paused != nil && status.pendingEntries == 1, "\(status)")
        try folder.expectCommand(["resume", folder.root])
        #expect(waitUntil(timeout: 30) { try readText(other.path("kept.txt")) == "kept for later" })
    }

    /// A pause that comes while a stop signal's drain waits for the queue ends the drain at once
    /// (as a held mass-delete guard does): the queue stays for the next mount.
    @Test func aPauseDuringAStopSignalsDrainEndsItAtOnce() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { folder.tearDown() }
        // A file still open for writing is never uploaded: the drain cannot end by itself.
        let writer = try openFile(folder.path("open.txt"), O_WRONLY | O_CREAT | O_TRUNC)
        var writerOpen = true
        defer { if writerOpen { close(writer) } }
        try writeAll(writer, bytes("still being written\n"))
        try posix("fsync") { fsync(writer) }
        let pid = try #require(folder.daemonPID)
        #expect(kill(pid, SIGTERM) == 0)
        try #require(
            waitUntil { folder.daemonLog().contains("stopping on SIGTERM: uploading ") }, "\(folder.daemonLog())")
        let started = Date()
        try folder.expectCommand(["pause", folder.root])
        try #require(
            waitUntil(timeout: 30) { !DaemonExitTest.isRunning(pid) }, "the daemon did not exit\n\(folder.daemonLog())")
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < DaemonExitTest.exitBound, "the drain went on for \(elapsed) s\n\(folder.daemonLog())")
        let log = folder.daemonLog()
        #expect(log.contains("stopping: the mount was paused; "), "\(log)")
        try folder.unmount()
        close(writer)
        writerOpen = false
        try folder.remount()
        let status = try pauseStatus(folder)
        #expect(status.paused != nil && status.pendingEntries == 1, "still paused, the file queued: \(status)")
        try folder.expectCommand(["resume", folder.root])
    }

    @Test func aBadDurationIsAUsageErrorAndChangesNothing() throws {
        try TestFolder.with(.mount) { a in
            for bad in ["1.5h", "30", "1y", "0s", "30m1h"] {
                let result = try a.expectCommand(["pause", a.root, "--for", bad], status: 64)
                #expect(result.stderr.contains("not a duration"), "\(bad): \(result.stderr)")
            }
            #expect(try pauseStatus(a).paused == nil)
        }
    }

    /// Another local user cannot pause or resume the mount, even through a socket opened to it
    /// (the control socket's peer check).
    @Test func anotherUserCannotPauseTheMount() throws {
        let daemon = try PrivateDaemon()
        defer { daemon.tearDown() }
        if let failure = try daemon.start() {
            Issue.record("mount failed (\(failure.status)): \(failure.log)")
            return
        }
        guard let socket = daemon.controlSocket() else { return }
        var info = stat()
        #expect(stat(socket, &info) == 0 && info.st_mode & 0o777 == 0o600, "the socket is the owner's only")
        let paused = try daemon.run(["pause", daemon.mountpoint])
        #expect(paused.status == 0, "the owner pauses: \(paused.output)")
        let nobodyRuntime = try daemon.openSocketToNobody(socket)
        for command in [["resume"], ["pause", "--for", "1m", "--all"]] {
            let result = try daemon.run(
                [command[0], daemon.mountpoint] + command.dropFirst(), asNobody: true, runtime: nobodyRuntime,
                timeout: 20)
            #expect(result.status == 77 && result.output.contains("not allowed"), "\(command): \(result.output)")
        }
        try daemon.closeRuntime()
        let mine = try daemon.run(["status", daemon.mountpoint, "--json"])
        #expect(
            mine.status == 0 && mine.output.contains("\"paused\":{\"all\":false}"),
            "still the owner's pause, unchanged: \(mine.output)")
    }
}
