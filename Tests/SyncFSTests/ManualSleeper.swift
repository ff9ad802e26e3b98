import Foundation

@testable import SyncFS

/// An `EngineSleeper` on a clock the test moves by hand (`advance(by:)`): a sleep ends once the
/// clock moved its whole duration after it began, or when the engine stops — never by itself.
final class ManualSleeper: EngineSleeper, @unchecked Sendable {
    /// Guards everything below; what sleeps wait on.
    private let condition = NSCondition()
    private var now: Duration = .zero
    private var stopped = false
    private var asleep: [Int: Duration] = [:]
    private var nextSleep = 0

    /// The durations of the sleeps in progress.
    var sleeping: [Duration] {
        condition.lock()
        defer { condition.unlock() }
        return Array(asleep.values)
    }

    /// Moves the clock on by `duration`: the sleeps it completes end.
    func advance(by duration: Duration) {
        condition.lock()
        defer { condition.unlock() }
        now += duration
        condition.broadcast()
    }

    func sleep(for duration: Duration) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let id = nextSleep
        nextSleep += 1
        asleep[id] = duration
        defer { asleep[id] = nil }
        let end = now + duration
        while !stopped && now < end { condition.wait() }
        return !stopped
    }

    func stop() -> Bool {
        condition.lock()
        defer {
            stopped = true
            condition.broadcast()
            condition.unlock()
        }
        return !stopped
    }
}
