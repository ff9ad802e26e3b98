import Foundation
import Glibc

/// Which signals end a wait for a download with EINTR: a READ (`PendingRead`), an open for
/// writing or a create that downloads first (`ContentResidency.openingWithDownloads`).
///
/// The kernel sends FUSE INTERRUPT for any signal that reaches a task waiting in a request. A local
/// disk never interrupts a read of a regular file, and many programs treat EINTR from one as an
/// error (they install SIGCHLD or SIGWINCH handlers with `SA_RESTART`, but the kernel returns the
/// daemon's EINTR whatever the flags; Go's runtime sends SIGURG to preempt, glibc uses real-time
/// signals between its threads). So, as NFS does since Linux 2.6.25 with its `intr` option gone,
/// only a signal that asks the program to stop or that bounds its wait ends the read: SIGINT,
/// SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGPIPE (and SIGKILL, whose waiting read
/// the kernel abandons by itself). Any other signal (SIGCHLD, SIGWINCH, SIGURG, SIGCONT, SIGPROF,
/// SIGIO, real-time signals) lets the read go on; a stopping signal arriving later still ends it
/// (`PendingReads` looks for one every 200 ms from the start of every wait, as the kernel sends
/// only one INTERRUPT per request, and none for readahead).
enum InterruptingSignals {
    /// The signals that end a waiting read.
    static let stopping: Set<Int32> = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGPIPE, SIGKILL]

    /// The signals pending and not blocked for a thread, from its `/proc/TID/status` text
    /// (`SigPnd`, `ShdPnd`, `SigBlk`: hexadecimal masks, bit N-1 for signal N). Nil if the text
    /// lacks them.
    static func pending(inStatus status: String) -> Set<Int32>? {
        var masks: [String: UInt64] = [:]
        for line in status.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, ["SigPnd", "ShdPnd", "SigBlk"].contains(String(parts[0])) else { continue }
            guard let mask = UInt64(parts[1].trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            masks[String(parts[0])] = mask
        }
        guard let thread = masks["SigPnd"], let shared = masks["ShdPnd"], let blocked = masks["SigBlk"] else {
            return nil
        }
        let mask = (thread | shared) & ~blocked
        return Set((1...64).filter { mask & (UInt64(1) << UInt64($0 - 1)) != 0 }.map { Int32($0) })
    }

    /// True if the read of thread `tid` must end: a stopping signal is pending for it, or its
    /// signals cannot be read (another PID namespace, a thread gone): then the interrupt is
    /// honoured as the kernel asked.
    static func endsRead(ofThread tid: pid_t) -> Bool {
        guard tid > 0, let status = try? String(contentsOfFile: "/proc/\(tid)/status", encoding: .utf8),
            let pending = pending(inStatus: status)
        else { return true }
        return !pending.isDisjoint(with: stopping)
    }

    /// True if a stopping signal is pending for thread `tid` (false if that cannot be read: a
    /// later look does not end a read the first one let go on).
    static func stoppingSignalPending(forThread tid: pid_t) -> Bool {
        guard tid > 0, let status = try? String(contentsOfFile: "/proc/\(tid)/status", encoding: .utf8),
            let pending = pending(inStatus: status)
        else { return false }
        return !pending.isDisjoint(with: stopping)
    }
}
