import Foundation
import Glibc

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
final class SessionLoopWaker: @unchecked Sendable {
    /// The signal that wakes the loop's thread.
    static let signal = SIGUSR2

    private enum Loop {
        case notStarted
        case running(pthread_t)
        case ended
    }

    /// Guards `loop`; broadcast when the loop starts or ends.
    private let condition = NSCondition()
    private var loop = Loop.notStarted

    /// The loop's thread calls this before it enters the loop.
    func loopStarting() {
        Self.installHandler()
        changeLoop(to: .running(pthread_self()))
    }

    /// The loop's thread calls this once the loop returned; no signal is sent after it.
    func loopEnded() {
        changeLoop(to: .ended)
    }

    private func changeLoop(to state: Loop) {
        condition.lock()
        loop = state
        condition.broadcast()
        condition.unlock()
    }

    /// Signals the loop's thread every `interval` microseconds until `loopEnded()` (the session's
    /// exit flag must already be set), and returns as soon as it is called. Waits, without
    /// signalling, while the loop has not started: a loop entered with the flag set returns at
    /// once.
    func wakeUntilEnded(interval: useconds_t = 50_000) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch loop {
            case .ended: return
            case .notStarted: break
            case .running(let thread): pthread_kill(thread, Self.signal)
            }
            _ = condition.wait(until: Date().addingTimeInterval(Double(interval) / 1e6))
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
