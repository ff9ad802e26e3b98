import Synchronization

/// At most `limit` holders at once, and no queue: `tryAcquire()` says no at once when all slots
/// are taken (the caller answers `503` with `Retry-After`, and the client retries later), so a
/// burst never piles up requests that each hold megabytes.
///
/// Every successful `tryAcquire()` must be paired with one `release()`.
final class ConcurrencyLimit: Sendable {
    let limit: Int
    private let holders = Mutex(0)

    init(_ limit: Int) {
        precondition(limit > 0, "a concurrency limit must be positive")
        self.limit = limit
    }

    /// Takes a slot if one is free.
    func tryAcquire() -> Bool {
        holders.withLock { holders in
            guard holders < limit else { return false }
            holders += 1
            return true
        }
    }

    func release() {
        holders.withLock { holders in
            precondition(holders > 0, "release() without tryAcquire()")
            holders -= 1
        }
    }

    /// The slots taken now.
    var inUse: Int { holders.withLock { $0 } }
}
