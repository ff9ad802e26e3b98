import Foundation

/// A named thread with a lifecycle: started once, asked to stop, joined. Every long-lived or
/// background thread of the package is one (it lives in SyncBackend, the lowest target that
/// SyncFS, the server and the command all use).
///
/// Contract:
/// - `start(body)` runs `body` on a new thread called `name`; the worker has ended when `body`
///   returned. A worker starts at most once; `start` again does nothing. (Created first and
///   started apart, a worker can be a stored property whose body uses its owner.)
/// - `stop()` asks it to stop and returns at once: `isStopping` turns true, a `sleep(for:)` in
///   progress (or to come) returns false at once, and `wake` (given at creation) runs once, for a
///   body blocked elsewhere (closing a descriptor, poking a queue it waits on). `body` decides
///   when to return; `stop()` never ends a thread by force.
/// - `join(until:)` waits — on a condition, no polling — until `body` returned or `deadline`
///   passed, and says which. A worker never started counts as ended. A body must not join itself.
/// - Stopping several at once (`Worker.stop(_:within:)`): every worker is signalled first, then
///   each is joined against one shared deadline, so the whole stop takes at most that long; the
///   names of those that did not end in time are returned (for the log).
///
/// `WorkerGroup` holds workers started one per job (a connection, a download) so that a shutdown
/// can stop and join those still running.
package final class Worker: @unchecked Sendable {
    package let name: String
    private let stackSize: Int?
    private let wake: @Sendable () -> Void
    /// Guards the two flags below and is what `join` waits on.
    private let condition = NSCondition()
    private var started = false
    private var ended = false
    /// The worker's stop, which `sleep(for:)` sleeps on.
    private let stopSignal = StopSignal()

    /// A worker not started yet. `stackSize` (bytes) overrides the thread default.
    package init(_ name: String, stackSize: Int? = nil, wake: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.stackSize = stackSize
        self.wake = wake
    }

    /// Creates a worker and starts it.
    @discardableResult
    package static func start(
        _ name: String, stackSize: Int? = nil, wake: @escaping @Sendable () -> Void = {},
        body: @escaping @Sendable (Worker) -> Void
    ) -> Worker {
        let worker = Worker(name, stackSize: stackSize, wake: wake)
        worker.start(body)
        return worker
    }

    /// Runs `body` on the worker's thread (see the contract).
    package func start(_ body: @escaping @Sendable (Worker) -> Void) {
        condition.lock()
        defer { condition.unlock() }
        guard !started else { return }
        started = true
        let thread = Thread { [self] in
            body(self)
            condition.lock()
            ended = true
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }

    /// True once `stop()` was called.
    package var isStopping: Bool { stopSignal.isStopped }

    /// True once `body` returned.
    package var hasEnded: Bool {
        condition.lock()
        defer { condition.unlock() }
        return ended
    }

    /// Asks the worker to stop (see the contract); does not wait.
    package func stop() {
        if stopSignal.stop() { wake() }
    }

    /// Waits until `body` returned (true) or `deadline` passed (false).
    @discardableResult
    package func join(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard started else { return true }
        while !ended {
            if !condition.wait(until: ConditionDeadline.bounded(deadline)) && Date() >= deadline { return ended }
        }
        return true
    }

    /// Waits until `body` returned, however long that takes.
    package func join() {
        condition.lock()
        defer { condition.unlock() }
        guard started else { return }
        while !ended { condition.wait() }
    }

    /// Waits at most `timeout` for `body` to return; true if it did.
    @discardableResult
    package func join(within timeout: Duration) -> Bool { join(until: ConditionDeadline.after(timeout)) }

    /// Pauses the calling thread (the worker's own) for `duration`, or less if the worker is asked
    /// to stop meanwhile; returns false once it is stopping. For pacing (a period, a backoff).
    @discardableResult
    package func sleep(for duration: Duration) -> Bool { stopSignal.sleep(for: duration) }

    /// Signals every worker, then joins each against one deadline `timeout` from now; returns
    /// the names of the workers that had not ended by then (empty: all ended).
    @discardableResult
    package static func stop(_ workers: [Worker], within timeout: Duration) -> [String] {
        for worker in workers { worker.stop() }
        let deadline = ConditionDeadline.after(timeout)
        return workers.filter { !$0.join(until: deadline) }.map(\.name)
    }
}

/// Workers started one per job (a client connection, a download), which a shutdown stops and
/// joins together: `stopAll()` signals those running, `join(until:)` waits, on a condition,
/// until none is left. A worker leaves the group when its body returns.
package final class WorkerGroup: @unchecked Sendable {
    private let condition = NSCondition()
    private var running: [ObjectIdentifier: Worker] = [:]

    package init() {}

    /// Starts `body` as a worker of this group.
    @discardableResult
    package func start(
        _ name: String, wake: @escaping @Sendable () -> Void = {}, body: @escaping @Sendable (Worker) -> Void
    ) -> Worker {
        let worker = Worker(name, wake: wake)
        condition.lock()
        running[ObjectIdentifier(worker)] = worker
        condition.unlock()
        worker.start { [self] worker in
            body(worker)
            condition.lock()
            running[ObjectIdentifier(worker)] = nil
            condition.broadcast()
            condition.unlock()
        }
        return worker
    }

    /// Workers whose body has not returned yet.
    package var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return running.count
    }

    /// Asks every running worker to stop (`Worker.stop()`); does not wait.
    package func stopAll() {
        condition.lock()
        let workers = Array(running.values)
        condition.unlock()
        for worker in workers { worker.stop() }
    }

    /// Waits until no worker of the group is running (true) or `deadline` passed (false).
    @discardableResult
    package func join(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !running.isEmpty {
            if !condition.wait(until: ConditionDeadline.bounded(deadline)) && Date() >= deadline {
                return running.isEmpty
            }
        }
        return true
    }

    @discardableResult
    package func join(within timeout: Duration) -> Bool { join(until: ConditionDeadline.after(timeout)) }
}
