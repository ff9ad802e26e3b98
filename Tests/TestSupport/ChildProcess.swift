import Foundation
import Glibc

/// Why a test's child process could not be started or did not answer.
public struct TestSupportError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
    public init(_ message: String) { self.message = message }
}

/// Child processes for tests, with plain posix_spawn and waitpid (no Foundation `Process`, whose
/// reaping thread and inherited descriptors get in the way of a daemon's lifeline).
public enum ChildProcess {
    /// posix_spawn with the three standard descriptors replaced, every signal unblocked and every
    /// handler at its default (the test runner ignores SIGPIPE, for instance). `environment` is
    /// added to (or replaces variables of) this process's environment, for the child only.
    public static func spawn(
        _ arguments: [String], stdin: Int32, stdout: Int32, stderr: Int32, environment: [String: String] = [:]
    ) throws(TestSupportError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { _, given in given }
        // A child that traps prints the crashed thread only, so a failure message's tail of its
        // log shows where it trapped (every thread and the registers would push it out).
        if variables["SWIFT_BACKTRACE"] == nil {
            variables["SWIFT_BACKTRACE"] = "enable=yes,threads=crashed,registers=none,images=none"
        }
        // Every status a test asks of a daemon checks the tree's counts against a walk.
        if variables["SYNCFS_TEST_CHECK_COUNTS"] == nil { variables["SYNCFS_TEST_CHECK_COUNTS"] = "1" }
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw TestSupportError("posix_spawn(\(arguments[0])) failed: \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// The wait status of `pid` once it has exited, or nil after `timeout` seconds (-1 if it was
    /// reaped elsewhere).
    public static func waitForExit(_ pid: pid_t, timeout: Double) -> Int32? {
        var status: Int32 = 0
        var ended: Int32?
        _ = waitUntil(timeout: timeout) {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { ended = status }
            if result == -1 && errno != EINTR { ended = -1 }
            return ended != nil
        }
        return ended
    }

    /// "exit status N" / "killed by signal N" for a wait status.
    public static func describe(_ status: Int32) -> String {
        if status == -1 { return "unknown status (already reaped)" }
        let signal = status & 0x7f
        if signal == 0 { return "exit status \((status >> 8) & 0xff)" }
        return "killed by signal \(signal)"
    }

    /// The exit code in a wait status, or the signal's number if a signal ended it (as Foundation's
    /// `Process.terminationStatus` says).
    public static func exitCode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : signal
    }

    /// The first line on `fd` (without its newline), or nil at end-of-file or after `timeout`
    /// seconds.
    public static func readLine(_ fd: Int32, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while !output.contains(10) {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return nil }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(remaining * 1000)) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return nil }
            output += buffer[0..<count]
        }
        return String(decoding: output.prefix { $0 != 10 }, as: UTF8.self)
    }
}
