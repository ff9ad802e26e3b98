import Synchronization

/// One lock request until it is answered, exactly once (`finish`). A blocking request
/// (F_SETLKW, flock without LOCK_NB) waits in `MountLocks`' list and is tried again whenever a
/// lock on its file is released here and every `MountLocks.retryInterval`; no thread waits
/// for it. `cancel` (the kernel interrupted the request: a signal) answers `interrupted` at
/// once if the request is waiting; if a try is under way, its outcome decides: granted stays
/// granted (the kernel takes the answer; the signal is handled after), anything else becomes
/// `interrupted`.
final class LockWaiter: Sendable {
    let probe: LockProbe
    let blocking: Bool
    private let answer: @Sendable (LockOutcome) -> Void

    private struct State {
        var trying = false
        var cancelled = false
        var finished = false
    }

    private let state = Mutex(State())

    init(probe: LockProbe, blocking: Bool, answer: @escaping @Sendable (LockOutcome) -> Void) {
        self.probe = probe
        self.blocking = blocking
        self.answer = answer
    }

    /// Starts a try; false if the request was answered (or cancelled) meanwhile.
    func beginTry() -> Bool {
        let proceed = state.withLock { state -> Bool in
            guard !state.finished, !state.cancelled else { return false }
            state.trying = true
            return true
        }
        if !proceed { finish(.interrupted) }
        return proceed
    }

    /// Ends a try that did not grant: the request waits on (true) unless it was cancelled during
    /// the try, which answers it `interrupted` (false).
    func keepWaiting() -> Bool {
        let cancelled = state.withLock { state -> Bool in
            state.trying = false
            return state.cancelled
        }
        if cancelled { finish(.interrupted) }
        return !cancelled
    }

    /// The kernel interrupted the request.
    func cancel() {
        let now = state.withLock { state -> Bool in
            state.cancelled = true
            return !state.trying
        }
        if now { finish(.interrupted) }
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// Answers the request unless it was answered already.
    func finish(_ outcome: LockOutcome) {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { answer(outcome) }
    }
}
