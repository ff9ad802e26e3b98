import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a merge command did.
public struct MergeCommandResult: Equatable, Sendable {
    /// True when the command exited with status 0 (the merged file is then at `%A`).
    public var merged: Bool
    /// Why it did not merge ("exited with status 1", "killed by signal 9", "timed out after 30 s",
    /// "could not start: …"); nil when merged.
    public var reason: String?
    /// Its exit status, when it exited.
    public var exitStatus: Int32?
    /// The first `MergeCommand.outputLimit` bytes of its standard output, for the log.
    public var output: [UInt8]
    /// The first `MergeCommand.outputLimit` bytes of its standard error, for the log.
    public var errorOutput: [UInt8]

    public init(merged: Bool, reason: String?, exitStatus: Int32?, output: [UInt8], errorOutput: [UInt8]) {
        self.merged = merged
        self.reason = reason
        self.exitStatus = exitStatus
        self.output = output
        self.errorOutput = errorOutput
    }
}

/// Runs the user's merge command (`MergePolicy.command`). The one place of SyncMerge with I/O.
public enum MergeCommand {
    /// How much of standard output and of standard error is kept (the rest is read and dropped).
    public static let outputLimit = 64 << 10

    /// Runs `commandLine` with `/bin/sh -c` in `workingDirectory` and waits for it, blocking the
    /// calling thread.
    ///
    /// The command runs as `identity` (`MergeIdentity`: never root when the daemon is root) in a
    /// process group of its own, with standard input from /dev/null, no other descriptor of the
    /// daemon, `identity.environment()` (nothing else of the daemon's environment), and default
    /// signal handling. Exit status 0 → merged. A non-zero status or a signal → not merged.
    /// After `timeoutSeconds` (at least 1) the whole process group gets SIGTERM, and SIGKILL one
    /// second later; the result is not merged. When the shell has exited, whatever it left
    /// running in its process group is killed (nothing writes the result after it is read).
    /// Output is captured while the command runs.
    public static func run(
        _ commandLine: String, timeoutSeconds: Int, workingDirectory: String,
        identity: MergeIdentity = .daemonUser()
    ) -> MergeCommandResult {
        var process: SpawnedShell
        do {
            process = try SpawnedShell(
                commandLine, workingDirectory: workingDirectory, environment: identity.environment(),
                identity: identity)
        } catch {
            return MergeCommandResult(
                merged: false, reason: "could not start: \(error.message)", exitStatus: nil, output: [],
                errorOutput: [])
        }
        let deadline = Monotonic.now + Double(max(timeoutSeconds, 1))
        var timedOut = false
        while !process.hasExited {
            let remaining = deadline - Monotonic.now
            if remaining <= 0 {
                timedOut = true
                process.terminateGroup()
                break
            }
            process.pump(timeout: min(remaining, 0.2))
        }
        // The shell is a zombie until reaped, so its process group ID still names its group.
        kill(-process.pid, SIGKILL)
        let status = process.reap()
        process.drain()
        let reason: String?
        var exitStatus: Int32?
        if timedOut {
            reason = "timed out after \(max(timeoutSeconds, 1)) s"
        } else if status & 0x7F == 0 {
            exitStatus = (status >> 8) & 0xFF
            reason = exitStatus == 0 ? nil : "exited with status \(exitStatus ?? 0)"
        } else {
            reason = "killed by signal \(status & 0x7F)"
        }
        return MergeCommandResult(
            merged: reason == nil, reason: reason, exitStatus: exitStatus, output: process.output,
            errorOutput: process.errorOutput)
    }
}

/// A monotonic clock in seconds.
enum Monotonic {
    static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
