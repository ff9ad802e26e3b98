import Foundation

/// A stop flag threads can sleep on: `sleep(for:)` returns early, without polling, once `stop()`
/// is called. Replaces sleep loops that woke every 50 ms to look at the flag.
final class StopSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false

    init() {}

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Sleeps `duration`, or less if `stop()` is (or was) called. Returns false once stopped.
    @discardableResult
    func sleep(for duration: Duration) -> Bool {
        let (seconds, attoseconds) = duration.components
        let deadline = Date().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while !stopped && condition.wait(until: deadline) {}
        return !stopped
    }
}
