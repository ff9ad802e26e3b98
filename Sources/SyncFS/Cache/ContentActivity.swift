import Dispatch
import Synchronization

/// Wakes the cache budget keeper when local content may have grown, so an idle mount's keeper
/// sleeps instead of walking the tree every second (doc/performance-log.md, "An idle mount").
///
/// Contract: after `note()`, the next `waitForActivity` (or the one in progress) returns true
/// promptly. `note()` is cheap enough for the write path: one atomic exchange, and a semaphore
/// signal only when the keeper is asleep and nothing was noted since it last looked.
/// A wake-up may be spurious (a signal left over from a race); callers just look again.
final class ContentActivity: Sendable {
    private let noted = Atomic<Bool>(false)
    private let sleeping = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)

    init() {}

    /// Content was written, downloaded, installed, or a pin changed.
    func note() {
        if noted.exchange(true, ordering: .acquiringAndReleasing) { return }
        if sleeping.exchange(false, ordering: .acquiringAndReleasing) { wake.signal() }
    }

    /// Waits until `note()` was called since the last return, or `timeout` passed. Returns
    /// whether activity was noted (false: the timeout, or a spurious wake-up).
    func waitForActivity(timeout: Duration) -> Bool {
        if noted.exchange(false, ordering: .acquiringAndReleasing) { return true }
        sleeping.store(true, ordering: .sequentiallyConsistent)
        // A note between the first look and `sleeping` saw no sleeper: look once more.
        if noted.exchange(false, ordering: .acquiringAndReleasing) {
            sleeping.store(false, ordering: .relaxed)
            return true
        }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
        _ = wake.wait(timeout: .now() + .nanoseconds(max(0, nanoseconds)))
        sleeping.store(false, ordering: .relaxed)
        return noted.exchange(false, ordering: .acquiringAndReleasing)
    }
}
