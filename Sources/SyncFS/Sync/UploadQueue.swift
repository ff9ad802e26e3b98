import SyncBackend

/// One entry with local changes the container has not committed yet (a row of the outbox).
public struct OutboxItem: Equatable, Sendable {
    public var fileID: FileID
    /// Order of the entry's first pending change: uploads go oldest first, which is an order the
    /// container accepts (a directory is made before what is put in it).
    public var seq: UInt64
    /// Bumped by every change after the first; an upload removes the item only if it did not
    /// change while the upload ran (re-dirtied during upload → uploaded again).
    public var generation: UInt64
    /// Not before this time (ns): the quiet delay after the last change, or the backoff after a
    /// failure. Not stored: after a restart every item is ready once the quiet delay passed.
    public var readyAt: Int64
    /// Failed attempts since the item was queued or last succeeded.
    public var attempts: Int
    /// Why the last attempt failed, for `syncfs-mount status`.
    public var lastError: String?
}

/// The upload queue as a pure value: which entries wait, in which order, until when.
///
/// The owner (`Outbox`) keeps it behind a lock and mirrors every change into the state database;
/// time is passed in, so tests drive it with a manual clock.
///
/// Invariants: at most one item per file ID; `seq` values are unique and increasing; an item
/// handed out by `takeNext` is *in flight* and is not handed out again until it is finished,
/// failed or postponed.
public struct UploadQueue: Sendable {
    public struct Policy: Sendable {
        /// How long an entry must stay unchanged before it is uploaded (lets a copy finish).
        public var quietDelay: Int64
        /// First retry delay after a failure; doubled per failure up to `maximumBackoff`.
        public var initialBackoff: Int64
        public var maximumBackoff: Int64

        public init(quietDelay: Int64, initialBackoff: Int64, maximumBackoff: Int64) {
            self.quietDelay = quietDelay
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }

        public static let standard = Policy(
            quietDelay: 100_000_000, initialBackoff: 1_000_000_000, maximumBackoff: 300_000_000_000)
    }

    public private(set) var items: [FileID: OutboxItem] = [:]
    public private(set) var inFlight: Set<FileID> = []
    private var nextSeq: UInt64
    public var policy: Policy

    public init(policy: Policy, restoring stored: [OutboxItem] = [], now: Int64 = 0) {
        self.policy = policy
        var highest: UInt64 = 0
        for var item in stored {
            item.readyAt = now + policy.quietDelay
            items[item.fileID] = item
            highest = max(highest, item.seq)
        }
        nextSeq = highest + 1
    }

    public var count: Int { items.count }

    public func contains(_ id: FileID) -> Bool { items[id] != nil }

    /// Records a local change of `id`; returns the item to store. A new item takes the next
    /// `seq`; a waiting item keeps its `seq`, takes a new generation and waits the quiet delay
    /// again (a file still being written keeps moving its upload back). A failing item keeps its
    /// backoff if that ends later.
    public mutating func changed(_ id: FileID, now: Int64) -> OutboxItem {
        let readyAt = now + policy.quietDelay
        if var item = items[id] {
            item.generation &+= 1
            item.readyAt = max(item.readyAt, readyAt)
            items[id] = item
            return item
        }
        let item = OutboxItem(
            fileID: id, seq: nextSeq, generation: 1, readyAt: readyAt, attempts: 0, lastError: nil)
        nextSeq += 1
        items[id] = item
        return item
    }

    /// The ready item with the lowest `seq` that is not in flight; marks it in flight.
    public mutating func takeNext(now: Int64) -> OutboxItem? {
        var best: OutboxItem?
        for item in items.values where item.readyAt <= now && !inFlight.contains(item.fileID) {
            if best == nil || item.seq < best!.seq { best = item }
        }
        if let best { inFlight.insert(best.fileID) }
        return best
    }

    /// Takes `id` now, whatever its ready time (a parent that must be committed before its
    /// child). Nil if it is not queued or already in flight.
    public mutating func take(_ id: FileID) -> OutboxItem? {
        guard let item = items[id], !inFlight.contains(id) else { return nil }
        inFlight.insert(id)
        return item
    }

    /// The earliest time an item not in flight becomes ready, if any.
    public func nextReadyTime() -> Int64? {
        items.values.filter { !inFlight.contains($0.fileID) }.map(\.readyAt).min()
    }

    /// The upload of `item` succeeded. Removes it unless it changed meanwhile; returns whether it
    /// was removed.
    @discardableResult
    public mutating func succeeded(_ item: OutboxItem) -> Bool {
        inFlight.remove(item.fileID)
        guard let current = items[item.fileID] else { return true }
        if current.generation == item.generation {
            items[item.fileID] = nil
            return true
        }
        var kept = current
        kept.attempts = 0
        kept.lastError = nil
        items[item.fileID] = kept
        return false
    }

    /// The upload failed; the item waits the next backoff (doubling from the initial one, capped).
    /// Returns the item to store.
    public mutating func failed(_ item: OutboxItem, reason: String, now: Int64) -> OutboxItem? {
        inFlight.remove(item.fileID)
        guard var current = items[item.fileID] else { return nil }
        current.attempts += 1
        current.lastError = reason
        current.readyAt = max(current.readyAt, now + backoff(afterAttempts: current.attempts))
        items[item.fileID] = current
        return current
    }

    /// The item is not ready after all (still open for writing): try again after `delay`.
    public mutating func postpone(_ item: OutboxItem, until readyAt: Int64) {
        inFlight.remove(item.fileID)
        guard var current = items[item.fileID] else { return }
        current.readyAt = max(current.readyAt, readyAt)
        items[item.fileID] = current
    }

    /// Drops `id` whatever its state (the change was abandoned, e.g. taken over by a remote one).
    public mutating func remove(_ id: FileID) {
        items[id] = nil
        inFlight.remove(id)
    }

    /// `sync`: every waiting item is ready now (quiet delays and backoffs end).
    public mutating func expediteAll(now: Int64) {
        for id in items.keys { items[id]!.readyAt = min(items[id]!.readyAt, now) }
    }

    /// The delay before attempt `attempts + 1`.
    public func backoff(afterAttempts attempts: Int) -> Int64 {
        guard attempts > 0 else { return 0 }
        var delay = policy.initialBackoff
        for _ in 1..<attempts {
            if delay >= policy.maximumBackoff / 2 { return policy.maximumBackoff }
            delay *= 2
        }
        return min(delay, policy.maximumBackoff)
    }
}
