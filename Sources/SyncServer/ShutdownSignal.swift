import ServiceLifecycle
import SyncBackend
import Synchronization

/// "The server is stopping": set once, when graceful shutdown begins, before the HTTP server
/// stops taking requests and waits for the ones in flight. Long polls race against it, so a
/// pending `changes/wait` answers `{"changed":false}` at once instead of holding up the stop.
///
/// Waiters are suspended on continuations (no polling); `trigger()` and cancellation resume them.
/// It also counts the change waits in progress (`pendingWaits`), for tests that must know a wait
/// is pending before they act (`SyncTestServer.pendingChangeWaits`).
final class ShutdownSignal: Sendable {
    private struct State {
        var triggered = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waiters cancelled before they could register.
        var cancelled: Set<UInt64> = []
    }

    private let state = Mutex(State())
    private let waitsInProgress = Mutex(0)

    var isTriggered: Bool { state.withLock { $0.triggered } }

    /// The calls of `unlessStopping` in progress: change waits that began and have not answered.
    var pendingWaits: Int { waitsInProgress.withLock { $0 } }

    /// Begins the stop: wakes every waiter, now and later.
    func trigger() {
        let waiters = state.withLock { state in
            state.triggered = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once `trigger()` was called (perhaps at once) or the calling task is cancelled.
    func wait() async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.triggered || state.cancelled.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    if !state.triggered { state.cancelled.insert(id) }
                    return nil as CheckedContinuation<Void, Never>?
                }
                return waiter
            }
            waiter?.resume()
        }
    }

    /// `wait()`'s result, or false as soon as the stop begins (`wait` is then cancelled, which
    /// ends a container's `waitForChanges` at once).
    func unlessStopping(
        _ wait: @escaping @Sendable () async throws(ContainerProtocolError) -> Bool
    ) async throws(ContainerProtocolError) -> Bool {
        if isTriggered { return false }
        waitsInProgress.withLock {
            $0 += 1
            ServerMetrics.openLongPolls.record($0)
        }
        defer {
            waitsInProgress.withLock {
                $0 -= 1
                ServerMetrics.openLongPolls.record($0)
            }
        }
        let result = await withTaskGroup(of: Result<Bool, ContainerProtocolError>?.self) { group in
            group.addTask {
                do throws(ContainerProtocolError) {
                    return .success(try await wait())
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                await self.wait()
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        return try (result ?? .success(false)).get()
    }
}

/// The service that sets the `ShutdownSignal` when its service group begins graceful shutdown.
/// It is the last service of the group, so it hears the shutdown first, before the HTTP server.
struct ShutdownWatcher: Service {
    let signal: ShutdownSignal

    func run() async {
        // Returns at graceful shutdown, or throws when the group is cancelled: stop either way.
        try? await gracefulShutdown()
        signal.trigger()
    }
}
