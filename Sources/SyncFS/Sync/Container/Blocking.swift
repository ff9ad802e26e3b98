import Dispatch
import SyncBackend
import Synchronization

/// Runs an async container call from one of the engine's own threads and waits for it.
///
/// The engine's uploader and follower are plain threads (they call Core synchronously and may
/// block on disk); this bridge lets them use the async container protocol — through
/// `BlockingContainer`, which adds the one error mapping — (so do command-line tools working on
/// a container or a server from plain threads). Never call it from a Swift
/// concurrency task. The error type is the body's own (`ContainerProtocolError` for container
/// calls).
///
/// The call runs on `BlockingCallExecutor`, not on Swift's cooperative pool (as many threads as
/// cores: two here): a thread that blocks on a pool thread — a test body waiting for an engine to
/// stop, a synchronous read of a placeholder — could otherwise leave no thread to run the call
/// it waits for, and every engine of the process would stall (seen: four engines stuck for 10 s
/// each in a loaded test run).
public enum Blocking {
    /// Runs `body` and waits for it. With `handle`, another thread can cancel it (`stop`).
    public static func run<T: Sendable, Failure: Error>(
        cancellable handle: CancelHandle? = nil,
        _ body: @escaping @Sendable () async throws(Failure) -> T
    ) throws(Failure) -> T {
        let result = Mutex<Result<T, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task(executorPreference: BlockingCallExecutor.shared) {
            do throws(Failure) {
                let value = try await body()
                result.withLock { $0 = .success(value) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        handle?.set(task)
        defer { handle?.set(nil) }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Runs `body` and waits for it at most `limit`: past it, the call is cancelled and left to
    /// end by itself (its outcome is dropped), and `timedOut` is thrown.
    static func run<T: Sendable, Failure: Error>(
        within limit: Duration, orThrow timedOut: Failure,
        _ body: @escaping @Sendable () async throws(Failure) -> T
    ) throws(Failure) -> T {
        let result = Mutex<Result<T, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task(executorPreference: BlockingCallExecutor.shared) {
            do throws(Failure) {
                let value = try await body()
                result.withLock { $0 = .success(value) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        let nanoseconds = Int(min(limit.inSeconds, 86_400) * 1e9)
        guard done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else {
            task.cancel()
            throw timedOut
        }
        return try result.withLock { $0! }.get()
    }
}

/// Lets one thread cancel the container call another thread is blocked in.
public final class CancelHandle: Sendable {
    private let state = Mutex<(task: Task<Void, Never>?, cancelled: Bool)>((nil, false))

    func set(_ task: Task<Void, Never>?) {
        let cancelNow = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelNow { task?.cancel() }
    }

    /// Cancels the current call only (a wait on the feed then ends at once with "no change").
    func interrupt() {
        state.withLock { $0.task }?.cancel()
    }

    /// Cancels the current call and every later one.
    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}

/// Where `Blocking.run` runs its calls: a task executor on a concurrent dispatch queue, whose
/// threads are not the cooperative pool's (libdispatch adds threads as jobs wait). Default actors
/// a call reaches (such as in-process containers) run there too (SE-0417); I/O waits (NIO event
/// loops) hold no thread of it.
final class BlockingCallExecutor: TaskExecutor {
    static let shared = BlockingCallExecutor()

    private let queue = DispatchQueue(label: "syncfs.blocking-calls", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
