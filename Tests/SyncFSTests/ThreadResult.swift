import Foundation
import SyncBackend

extension Thread {
    /// Runs `body` on a new thread; its result is read with `value(within:)`.
    static func detachNewThreadWithResult<T: Sendable>(_ body: @escaping @Sendable () -> T)
        -> ThreadResult<T>
    {
        let result = ThreadResult<T>()
        Thread.detachNewThread { result.set(body()) }
        return result
    }
}

/// What a thread started by `detachNewThreadWithResult` returned, read on a condition.
final class ThreadResult<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: T?

    func set(_ value: T) {
        condition.lock()
        result = value
        condition.broadcast()
        condition.unlock()
    }

    struct TimedOut: Error {}

    /// The thread's result; throws if it has not returned within `limit` (a hung wait).
    func value(within limit: Duration) throws -> T {
        let deadline = ConditionDeadline.after(limit)
        condition.lock()
        defer { condition.unlock() }
        while result == nil { if !condition.wait(until: deadline) { break } }
        guard let result else { throw TimedOut() }
        return result
    }
}
