import Foundation
import Glibc
import TestSupport
import Testing

/// A daemon killed with SIGKILL (what `Restart=on-failure` recovers from): the same `mount`
/// command run again clears the dead mount and carries on within seconds, with what was fsynced
/// before the kill, which then reaches the container. Meanwhile the CLI says what happened to the
/// mount and what fixes it instead of "Transport endpoint is not connected".
@Suite(.serialized)
struct CrashRestartTest {
    @Test func theSameMountCommandAfterKill9IsBackWithEverything() throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        let first = try runProcess(mount.mountCommand, timeout: 60)
        #expect(first.status == 0, "\(first.output)")
        try #require(mount.isMounted)
        let bytes = patternBytes(count: 300_000, seed: 15)
        try withFile(mount.mountpoint + "/kept.bin", O_CREAT | O_WRONLY | O_TRUNC) { fd in
            try writeAll(fd, bytes)
            try posix("fsync") { fsync(fd) }
        }
        let pid = try #require(mount.daemonPID(), "no daemon process found for \(mount.mountpoint)")
        kill(pid, SIGKILL)
        #expect(waitForProcessGone(pid, timeout: 10))
        #expect(mount.isMounted, "the dead mount stays until something clears it")
        var info = statvfs()
        expectErrno(ENOTCONN, "statvfs on the dead mount") { statvfs(mount.mountpoint, &info) }

        // The CLI names the problem and the fix.
        let status = try mount.run(["status", mount.mountpoint + "/kept.bin"], timeout: 30)
        #expect(status.status == 69, "\(status.output)")
        #expect(status.output.contains("daemon of this mount is gone"), "\(status.output)")
        #expect(status.output.contains("syncfs-mount mount"), "\(status.output)")
        #expect(status.output.contains("systemctl restart"), "\(status.output)")
        let evict = try mount.run(["evict", mount.mountpoint], timeout: 30)
        #expect(evict.status == 69 && evict.output.contains("daemon of this mount is gone"), "\(evict.output)")

        let started = Date()
        let again = try runProcess(mount.mountCommand, timeout: 60)
        let restart = Date().timeIntervalSince(started)
        #expect(again.status == 0, "\(again.output)")
        #expect(restart < 5, "the restarted mount took \(restart) s")
        #expect(statvfs(mount.mountpoint, &info) == 0, "the mount is not live again")
        #expect(try readFile(mount.mountpoint + "/kept.bin") == bytes)
        let synced = try mount.run(["sync", mount.mountpoint], timeout: 60)
        #expect(synced.status == 0, "\(synced.output)")

        // It reached the container: a fresh mount of it (another machine) has the bytes.
        let other = try TestFolder.make(.mount, sharedContainer: mount.container)
        defer { other.tearDown() }
        #expect(waitUntil(timeout: 20) { try readFile(other.path("kept.bin")) == bytes }, "\(other.daemonLog())")
        print("CrashRestartTest: the same mount command after kill -9 took \(restart) s")
    }
}
