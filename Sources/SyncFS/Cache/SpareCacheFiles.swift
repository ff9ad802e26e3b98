import Dispatch
import Foundation
import Glibc
import SyncBackend
import Synchronization

/// A few empty cache files created ahead of time by a background thread, so that `create` in the
/// folder does not wait for the local disk to create a file (on the disks measured here that is
/// about half of a create's latency).
///
/// Contract: a spare is an empty cache file named by a fresh random file ID, open read-write.
/// `take()` hands it over (the caller owns the descriptor). Spares that were never taken are
/// deleted by `close()`; after a crash, the mount-time sweep deletes them (cache files without
/// an entry).
final class SpareCacheFiles: Sendable {
    private struct State {
        var spares: [(FileID, Int32)] = []
        var closed = false
    }

    private let cache: ContentCache
    private let target: Int
    private let state = Mutex(State())
    private let refill: DispatchSemaphore
    private let worker: Worker

    init(cache: ContentCache, target: Int = 32) {
        self.cache = cache
        self.target = target
        let refill = DispatchSemaphore(value: 0)
        self.refill = refill
        worker = Worker("syncfs-spares", wake: { refill.signal() })
        worker.start { [self] _ in run() }
        refill.signal()
    }

    /// A spare, or nil when none is ready (the caller then creates one itself).
    func take() -> (FileID, Int32)? {
        let (spare, low) = state.withLock { state -> ((FileID, Int32)?, Bool) in
            let spare = state.spares.popLast()
            return (spare, state.spares.count < target / 2)
        }
        if low { refill.signal() }
        return spare
    }

    /// The worker: tops the spares up to `target` whenever `refill` is signalled, until closed.
    private func run() {
        while true {
            refill.wait()
            while true {
                let (closed, count) = state.withLock { ($0.closed, $0.spares.count) }
                if closed { return }
                if count >= target { break }
                let id = FileID.random()
                guard let fd = try? cache.createAndOpen(id) else { break }
                state.withLock { $0.spares.append((id, fd)) }
            }
        }
    }

    /// Stops the thread and deletes the spares.
    func close() {
        state.withLock { $0.closed = true }
        worker.stop()
        worker.join()
        let spares = state.withLock { state in
            defer { state.spares = [] }
            return state.spares
        }
        for (id, fd) in spares {
            Glibc.close(fd)
            cache.remove(id)
        }
    }
}
