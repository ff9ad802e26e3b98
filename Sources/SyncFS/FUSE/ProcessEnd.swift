import CFuse
import Glibc

/// The end of a process that is not this one's child (a mount's daemon, after its unmount), which
/// `wait(2)` cannot wait for. Here because the pidfd comes through the C shim (CFuse).
enum ProcessEnd {
    /// Waits at most `timeout` seconds for `pid` to exit: true once it has (or if there is no such
    /// process), false at the deadline. Sleeps on a pidfd, which the kernel makes readable when
    /// the process exits; without pidfds (a kernel before 5.3) it looks every 20 ms.
    static func wait(for pid: pid_t, timeout: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64((timeout * 1000).rounded(.up)))
        let descriptor = syncfs_pidfd_open(pid)
        if descriptor < 0 {
            if errno == ESRCH { return true }
            return look(for: pid, until: deadline)
        }
        defer { close(descriptor) }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            if remaining <= .zero { return false }
            let milliseconds = min((remaining / .milliseconds(1)).rounded(.up), 3_600_000)
            let result = poll(&entry, 1, Int32(milliseconds))
            if result > 0 { return true }
            if result < 0 && errno != EINTR { return look(for: pid, until: deadline) }
        }
    }

    /// The fallback: `kill(pid, 0)` every 20 ms until it fails or `deadline` passes.
    private static func look(for pid: pid_t, until deadline: ContinuousClock.Instant) -> Bool {
        while kill(pid, 0) == 0 {
            if ContinuousClock.now >= deadline { return false }
            usleep(20_000)
        }
        return true
    }
}
