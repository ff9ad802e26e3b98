import Foundation
import Glibc
import TestSupport
import Testing

/// SIGINT (Ctrl-C) and SIGTERM stop a `mount --foreground` daemon as `unmount` does (doc/CLI.md,
/// "Stopping a mount"): the queue is uploaded first, with a deadline; a second signal stops at
/// once and says what stays queued for the next mount.
@Suite(.serialized)
struct StopSignalTest {
    /// A long upload delay: nothing would leave before the stop unless the stop sends it.
    static let holdingDelay = ["--upload-delay", "60000"]

    @Test(arguments: [SIGINT, SIGTERM])
    func aStopSignalUploadsTheQueueBeforeExiting(signal: Int32) throws {
        let folder = try TestFolder.make(.mount, mountArguments: Self.holdingDelay)
        defer { folder.tearDown() }
        let content = patternBytes(count: 300_000, seed: 0x5109)
        try writeFile(folder.path("queued.bin"), content)
        let pid = try #require(folder.daemonPID)

        #expect(kill(pid, signal) == 0)
        try #require(
            waitUntil(timeout: 45) { !DaemonExitTest.isRunning(pid) }, "the daemon did not exit\n\(folder.daemonLog())")
        try folder.unmount()
        let log = folder.daemonLog()
        let name = signal == SIGINT ? "SIGINT" : "SIGTERM"
        #expect(log.contains("stopping on \(name): uploading 1 queued change first"), "\(log)")

        // Another mount of the container, with a state of its own, has the file.
        let other = try TestFolder.make(.mount, sharedContainer: folder.containerPath)
        defer { other.tearDown() }
        #expect(try readFile(other.path("queued.bin")) == content, "\(log)")
    }

    @Test func aSecondSignalStopsAtOnceAndSaysWhatStaysQueued() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { folder.tearDown() }
        // A file still open for writing is never uploaded: the first signal's wait cannot end.
        let writer = try openFile(folder.path("open.txt"), O_WRONLY | O_CREAT | O_TRUNC)
        var writerOpen = true
        defer { if writerOpen { close(writer) } }
        try writeAll(writer, bytes("still being written\n"))
        try posix("fsync") { fsync(writer) }
        let pid = try #require(folder.daemonPID)

        #expect(kill(pid, SIGINT) == 0)
        try #require(
            waitUntil { folder.daemonLog().contains("stopping on SIGINT: uploading ") },
            "\(folder.daemonLog())")
        #expect(DaemonExitTest.isRunning(pid), "the first signal waits for the queue\n\(folder.daemonLog())")

        let started = Date()
        #expect(kill(pid, SIGINT) == 0)
        try #require(
            waitUntil(timeout: 30) { !DaemonExitTest.isRunning(pid) }, "the daemon did not exit\n\(folder.daemonLog())")
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < DaemonExitTest.exitBound, "the second signal took \(elapsed) s\n\(folder.daemonLog())")
        let log = folder.daemonLog()
        #expect(log.contains("stopping at once on a second SIGINT: "), "\(log)")
        #expect(log.contains(" stays queued; it is uploaded at the next mount"), "one change waits: \(log)")
        try folder.unmount()
        close(writer)
        writerOpen = false

        // Nothing is lost: the next mount has the queued file.
        try folder.remount()
        #expect(try readText(folder.path("open.txt")) == "still being written\n")
    }
}
