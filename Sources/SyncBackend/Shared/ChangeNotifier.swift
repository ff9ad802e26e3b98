import Synchronization

/// Wakes tasks waiting for "something changed": the push half of `waitForChanges`.
///
/// A counter, `generation`, goes up on every `notify()`. A waiter reads it, checks its condition,
/// then calls `wait(since:timeout:)` with the value it read: the wait returns at once if a
/// notification came in between (no lost wake-up), else at the next `notify()`, after `timeout`,
/// or when the task is cancelled. The caller re-checks its condition after every return.
///
/// Waiting tasks are suspended on continuations; `notify()` resumes them directly. No lock is held
/// while a continuation is resumed or across a suspension.
package final class ChangeNotifier: Sendable {
    private enum Slot {
        /// Allocated; the continuation is not registered yet.
        case preparing
        /// Suspended; `timer` resumes it when the timeout passes.
        case waiting(CheckedContinuation<Void, Never>, timer: Task<Void, Never>?)
        /// Cancelled before it could register: the registration returns at once.
        case cancelled
    }

    private struct State {
        package var generation: UInt64 = 0
        var nextID: UInt64 = 0
        var slots: [UInt64: Slot] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    package var generation: UInt64 { state.withLock { $0.generation } }

    /// When a wait of `timeout` from now ends (a timeout beyond a day is taken as a day).
    package static func deadline(after timeout: Duration) -> ContinuousClock.Instant {
        ContinuousClock.now + min(max(timeout, .zero), .seconds(86_400))
    }

    /// Wakes every waiter.
    package func notify() {
        let woken = state.withLock { state in
            state.generation &+= 1
            var woken: [(CheckedContinuation<Void, Never>, Task<Void, Never>?)] = []
            for (id, slot) in state.slots {
                if case .waiting(let continuation, let timer) = slot {
                    woken.append((continuation, timer))
                    state.slots[id] = nil
                }
            }
            return woken
        }
        for (continuation, timer) in woken {
            timer?.cancel()
            continuation.resume()
        }
    }

    /// Returns once `generation` differs from `seen` (perhaps at once), after `timeout`, or when
    /// the calling task is cancelled.
    package func wait(since seen: UInt64, timeout: Duration) async {
        let id = state.withLock { state in
            state.nextID += 1
            state.slots[state.nextID] = .preparing
            return state.nextID
        }
        defer { _ = state.withLock { $0.slots.removeValue(forKey: id) } }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let registered = state.withLock { state in
                    guard state.generation == seen, case .preparing = state.slots[id] else { return false }
                    state.slots[id] = .waiting(continuation, timer: nil)
                    return true
                }
                guard registered else { return continuation.resume() }
                let timer = Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    self?.wake(id)
                }
                let stillWaiting = state.withLock { state in
                    guard case .waiting(let continuation, .none) = state.slots[id] else { return false }
                    state.slots[id] = .waiting(continuation, timer: timer)
                    return true
                }
                if !stillWaiting { timer.cancel() }
            }
        } onCancel: {
            wake(id)
        }
    }

    /// Resumes waiter `id` if it is suspended, or makes its registration return at once.
    private func wake(_ id: UInt64) {
        let woken = state.withLock { state -> (CheckedContinuation<Void, Never>, Task<Void, Never>?)? in
            switch state.slots[id] {
            case .waiting(let continuation, let timer):
                state.slots[id] = nil
                return (continuation, timer)
            case .preparing:
                state.slots[id] = .cancelled
                return nil
            case .cancelled, nil:
                return nil
            }
        }
        if let (continuation, timer) = woken {
            timer?.cancel()
            continuation.resume()
        }
    }
}
