import Dispatch
import SyncBackend
import Synchronization

/// Runs an async container call from one of the engine's own threads and waits for it.
///
/// The engine's uploader and follower are plain threads (they call Core synchronously and may
/// block on disk); this bridge lets them use the async container protocol (so do command-line
/// tools working on a container or a server from plain threads). Never call it from a Swift
/// concurrency task. The error type is the body's own (`ContainerProtocolError` for container
/// calls).
public enum Blocking {
    /// Runs `body` and waits for it. With `handle`, another thread can cancel it (`stop`).
    public static func run<T: Sendable, Failure: Error>(
        cancellable handle: CancelHandle? = nil,
        _ body: @escaping @Sendable () async throws(Failure) -> T
    ) throws(Failure) -> T {
        let result = Mutex<Result<T, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task {
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

    /// Cancels the current call and every later one.
    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}
