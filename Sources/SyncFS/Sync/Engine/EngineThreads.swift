import SyncBackend
import Synchronization

/// The engine's threads, each a `Worker`: started with a name and what wakes it from its wait;
/// at `stop` all are signalled first, then joined against one deadline (a join on their ends,
/// never a poll of flags).
final class EngineThreads: Sendable {
    private let workers = Mutex<[Worker]>([])

    init() {}

    /// Runs `body` on a new thread named `name`; `wake` ends whatever `body` waits on.
    func start(_ name: String, wake: @escaping @Sendable () -> Void, body: @escaping @Sendable () -> Void) {
        let worker = Worker.start(name, wake: wake, body: { _ in body() })
        workers.withLock { $0.append(worker) }
    }

    /// Signals every thread, then waits at most `limit` for all of them to end; returns the
    /// names of those that had not (empty: all ended).
    func stop(within limit: Duration) -> [String] {
        Worker.stop(workers.withLock { $0 }, within: limit)
    }
}
