import Foundation
import SyncBackend

/// A number that only moves forward, which other threads can wait on: `advance(to:)` (or
/// `increment()`) moves it and wakes every `wait(forAtLeast:until:)` it satisfies — a wait ends on
/// the condition, never on a polling tick.
///
/// Contract: the value starts at `initial` and never decreases (`advance` to a smaller value does
/// nothing). `wait` returns true as soon as the value is at least its target (at once if it already
/// is), false once `deadline` passed without that. Any thread may advance it; a value advanced
/// while nobody waits costs one uncontended lock.
final class AwaitedVersion: @unchecked Sendable {
    /// Guards `current` and `waiters`; what waits wait on.
    private let condition = NSCondition()
    private var current: UInt64
    private var waiters = 0

    init(_ initial: UInt64 = 0) { current = initial }

    var value: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return current
    }

    /// How many waits are in progress (a thread inside `wait`, its target not reached yet).
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters
    }

    /// Moves the value forward to `version` (no change if it is not larger) and wakes the waits.
    func advance(to version: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        guard version > current else { return }
        current = version
        condition.broadcast()
    }

    /// Moves the value forward by one and wakes the waits (a count of changes); returns the new value.
    @discardableResult
    func increment() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        current += 1
        condition.broadcast()
        return current
    }

    /// Waits until the value is at least `target` (true) or `deadline` passed (false).
    func wait(forAtLeast target: UInt64, until deadline: Date) -> Bool {
        condition.lock()
        waiters += 1
        defer {
            waiters -= 1
            condition.unlock()
        }
        while current < target {
            if !condition.wait(until: ConditionDeadline.bounded(deadline)) && Date() >= deadline {
                return current >= target
            }
        }
        return true
    }

    /// Waits at most `timeout` until the value is at least `target`; true if it got there.
    func wait(forAtLeast target: UInt64, within timeout: Duration) -> Bool {
        wait(forAtLeast: target, until: ConditionDeadline.after(timeout))
    }
}
