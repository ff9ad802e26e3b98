import Dispatch
import SyncBackend
import Synchronization

/// Reads the feed's next page while the follower applies the current one.
///
/// An attach or a catch-up is a sequence of pages, each read (a request, JSON decoding, the
/// entries' checks: a fifth of an attach's CPU) and then applied; reading page N+1 on another
/// thread during the apply of page N overlaps the two. At most one page is read ahead, for one
/// cursor. A read ahead reaches the container exactly as the follower's own read would (the same
/// `BlockingContainer`, with its reachability and answer bookkeeping), only earlier.
///
/// A read that is not wanted any more (a page asked for another cursor after a failure, a pause,
/// a stop) is dropped, not waited for: it ends by itself (a feed read is not cancellable, and a
/// stop must not wait up to a request's deadline for a page nobody will apply).
final class FeedReadAhead: Sendable {
    private final class Read: Sendable {
        let after: FeedCursor
        let finished = DispatchSemaphore(value: 0)
        let result = Mutex<Result<ChangeBatch, SyncFailure>?>(nil)

        init(after: FeedCursor) { self.after = after }

        /// The result, once the read ended (one caller: the follower, after `take`).
        func wait() -> Result<ChangeBatch, SyncFailure> {
            finished.wait()
            return result.withLock { $0! }
        }
    }

    private let container: BlockingContainer
    private let limit: Int
    private let pending = Mutex<Read?>(nil)

    init(container: BlockingContainer, limit: Int) {
        self.container = container
        self.limit = limit
    }

    /// Starts reading the page after `cursor` (a read still pending is dropped).
    func start(after cursor: FeedCursor) {
        let read = Read(after: cursor)
        pending.withLock { $0 = read }
        // A thread of its own: `Blocking.run` must not block a thread of a pool its call needs.
        Worker.start("syncfs-feed-read") { [container, limit] _ in
            let result = Result { () throws(SyncFailure) -> ChangeBatch in
                try container.changes(after: cursor, limit: limit)
            }
            read.result.withLock { $0 = result }
            read.finished.signal()
        }
    }

    /// The page after `cursor`: the one read ahead for it (waiting for it), else one read now.
    func page(after cursor: FeedCursor) throws(SyncFailure) -> ChangeBatch {
        if let read = take(), read.after == cursor { return try read.wait().get() }
        return try container.changes(after: cursor, limit: limit)
    }

    /// Drops the read pending, if any, without waiting for it (a pause, a stop).
    func drop() {
        _ = take()
    }

    private func take() -> Read? {
        pending.withLock { read in
            defer { read = nil }
            return read
        }
    }
}
