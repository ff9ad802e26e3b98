import Foundation

/// A stop flag threads can sleep on: `sleep(for:)` returns early, without polling, once `stop()`
/// is called. A `Worker` keeps one for its own stop; the sync engine shares one among its threads
/// (its pauses between attempts).
///
/// Contract: `stop()` is final and may be called any number of times (the first call returns
/// true); `sleep(for:)` sleeps `duration` of real time, or returns at once when stopped before or
/// meanwhile, and says whether it is still running (false once stopped).
package final class StopSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false

    package init() {}

    /// True once `stop()` was called.
    package var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// Ends every sleep in progress and to come; true the first time.
    @discardableResult
    package func stop() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let first = !stopped
        stopped = true
        condition.broadcast()
        return first
    }

    /// Sleeps `duration`, or less if `stop()` is (or was) called. Returns false once stopped.
    @discardableResult
    package func sleep(for duration: Duration) -> Bool {
        let deadline = ConditionDeadline.after(duration)
        condition.lock()
        defer { condition.unlock() }
        while !stopped && Date() < deadline { _ = condition.wait(until: ConditionDeadline.bounded(deadline)) }
        return !stopped
    }
}
