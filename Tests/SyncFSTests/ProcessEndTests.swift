import Foundation
import Glibc
import TestSupport
import Testing

@testable import SyncFS

/// `ProcessEnd.wait`: the unmount's wait for its daemon to end, on a pidfd.
struct ProcessEndTests {
    private func sleeper(_ seconds: String) throws -> pid_t {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(null) }
        return try ChildProcess.spawn(["/bin/sleep", seconds], stdin: null, stdout: null, stderr: null)
    }

    @Test func aProcessThatEndsIsSeenEndingBeforeTheDeadline() throws {
        let pid = try sleeper("0.3")
        defer { _ = ChildProcess.waitForExit(pid, timeout: 10) }
        let started = ContinuousClock.now
        #expect(ProcessEnd.wait(for: pid, timeout: 60), "sleep 0.3 ended")
        #expect(ContinuousClock.now - started < .seconds(30), "woken by the exit, not the deadline")
    }

    @Test func aProcessStillRunningAtTheDeadlineIsReported() throws {
        let pid = try sleeper("60")
        defer {
            kill(pid, SIGKILL)
            _ = ChildProcess.waitForExit(pid, timeout: 10)
        }
        #expect(!ProcessEnd.wait(for: pid, timeout: 0.2), "still running after 0.2 s")
        #expect(kill(pid, 0) == 0)
    }

    @Test func aProcessThatIsGoneHasEnded() throws {
        let pid = try sleeper("0")
        #expect(ChildProcess.waitForExit(pid, timeout: 10) != nil, "reaped")
        #expect(ProcessEnd.wait(for: pid, timeout: 5))
    }
}
