import Glibc
import Synchronization

/// Wakes libfuse's loop once `FuseSession.exit()` ended the session from another thread.
///
/// libfuse's multithreaded loop waits on a semaphore until a worker reports the end, and
/// `fuse_session_exit` only sets a flag: a worker sees it after answering its next request, or
/// when its read of `/dev/fuse` fails because the kernel ended the connection. `exit()` detaches
/// the mount lazily, and the kernel ends the connection only once nothing uses the mount any more.
/// So a program that kept a file or a directory open in the folder (or its working directory
/// there) kept the daemon waiting with no end after its lifeline closed: no request came,
/// nothing woke the loop.
///
/// The waker signals the loop's thread with `signal` — whose handler does nothing and is installed
/// without `SA_RESTART`, so the semaphore wait returns EINTR — until the loop returned: the woken
/// loop sees the flag, cancels its idle workers and returns. The signal is repeated because one
/// that arrives between the loop's look at the flag and its wait is lost. A `signal` sent to the
/// daemon from outside does nothing (it used to end the process without committing the state).
final class SessionLoopWaker: Sendable {
    /// The signal that wakes the loop's thread.
    static let signal = SIGUSR2

    private enum Loop {
        case notStarted
        case running(pthread_t)
        case ended
    }

    private let loop = Mutex<Loop>(.notStarted)

    /// The loop's thread calls this before it enters the loop.
    func loopStarting() {
        Self.installHandler()
        loop.withLock { $0 = .running(pthread_self()) }
    }

    /// The loop's thread calls this once the loop returned; no signal is sent after it.
    func loopEnded() {
        loop.withLock { $0 = .ended }
    }

    /// Signals the loop's thread every `interval` microseconds until `loopEnded()` (the session's
    /// exit flag must already be set). Waits, without signalling, while the loop has not started:
    /// a loop entered with the flag set returns at once.
    func wakeUntilEnded(interval: useconds_t = 50_000) {
        while true {
            let ended = loop.withLock { state -> Bool in
                switch state {
                case .ended: return true
                case .notStarted: return false
                case .running(let thread):
                    pthread_kill(thread, Self.signal)
                    return false
                }
            }
            if ended { return }
            usleep(interval)
        }
    }

    /// A handler that does nothing, without `SA_RESTART` (an interrupted wait returns EINTR).
    private static func installHandler() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(signal, &action, nil)
    }
}
