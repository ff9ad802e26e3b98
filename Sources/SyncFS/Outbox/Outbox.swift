import Dispatch
import SyncBackend
import Synchronization

/// The live upload queue: an `UploadQueue` behind a lock, mirrored into the state database.
///
/// Core calls `changed` for every local change that syncs, under its namespace lock, and puts
/// the returned row in the same store batch as the entry change (one transaction). The uploader
/// takes items, and reports how they ended; each report returns the store change that mirrors it.
/// Its queue lock is a leaf (`LiveTree`'s lock hierarchy): taken inside the namespace lock or
/// alone, and nothing is taken while it is held — the store changes it returns are recorded by
/// the caller after it is released.
final class Outbox: Sendable {
    private let queue: Mutex<UploadQueue>
    /// Signalled when an item may have become ready (a change, a `sync` request).
    private let wake = DispatchSemaphore(value: 0)
    /// When the sleeping uploader will wake by itself (0 while it is awake).
    private let uploaderWakesAt = Atomic<Int64>(0)
    private let clock: @Sendable () -> Int64
    /// Items whose ignore verdict, given just now, was "wait for the rules" (`noteWaiting`).
    private let verdictsWaiting = Mutex<Set<FileID>>([])
    /// When a container call last succeeded (`containerAnswered`), for the failure log.
    let lastAnswerAt = Atomic<Int64>(0)
    /// Which failures the engine logs (the first of a kind, then a summary per interval, not a
    /// line per attempt; shared by the uploader, the follower and downloads).
    let failureLog = RepeatedFailureLog()

    init(policy: UploadQueue.Policy, restoring stored: [OutboxItem], clock: @escaping @Sendable () -> Int64) {
        self.clock = clock
        queue = Mutex(UploadQueue(policy: policy, restoring: stored, now: clock()))
    }

    var now: Int64 { clock() }

    /// Records a local change of `id`; returns the outbox row to commit with it.
    func changed(_ id: FileID) -> MetadataChange {
        let now = clock()
        let item = queue.withLock { $0.changed(id, now: now) }
        // Wake the uploader only if it sleeps past this item's ready time: a burst of creates
        // must not cost a thread wake-up each.
        if uploaderWakesAt.load(ordering: .sequentiallyConsistent) > item.readyAt { wake.signal() }
        return .outboxPut(item)
    }

    func isPending(_ id: FileID) -> Bool { queue.withLock { $0.contains(id) } }
    /// Every ID `isPending` is true for now.
    var pendingIDs: Set<FileID> { queue.withLock { Set($0.items.keys) } }

    /// Whether `item`'s entry has had no local change since the item was taken (a change bumps
    /// its generation; a finished item is gone).
    func isUnchanged(since item: OutboxItem) -> Bool {
        queue.withLock { $0.items[item.fileID]?.generation == item.generation }
    }

    /// Why the last upload of `id` failed, if it is queued and did.
    func lastError(_ id: FileID) -> String? { queue.withLock { $0.items[id]?.lastError } }

    func takeNext() -> OutboxItem? { queue.withLock { $0.takeNext(now: clock()) } }

    /// Up to `limit` ready items, oldest first (see `UploadQueue.takeReady`).
    func takeReady(upTo limit: Int) -> [OutboxItem] { queue.withLock { $0.takeReady(upTo: limit, now: clock()) } }

    /// Whether the folder is in a burst of local changes now (`UploadQueue.Policy`; never while
    /// `sync` expedites the queue).
    var isBursting: Bool { queue.withLock { $0.isBursting(now: clock()) } }

    func take(_ id: FileID) -> OutboxItem? { queue.withLock { $0.take(id) } }

    /// The store change for a finished upload (nil if the item changed meanwhile and stays).
    func succeeded(_ item: OutboxItem) -> MetadataChange? {
        let removed = queue.withLock { $0.succeeded(item) }
        if !removed { wake.signal() }
        return removed ? .outboxRemove(item.fileID) : nil
    }

    func failed(_ item: OutboxItem, reason: String?, waitsForContainer: Bool = false) -> MetadataChange? {
        let now = clock()
        return queue.withLock { $0.failed(item, reason: reason, now: now, waitsForContainer: waitsForContainer) }
            .map { .outboxPut($0) }
    }

    /// A container call succeeded: items that failed only because the container could not be
    /// reached go now (see `UploadQueue.containerAnswered`). Cheap when there are none.
    func containerAnswered() {
        let now = clock()
        lastAnswerAt.store(now, ordering: .relaxed)
        if queue.withLock({ $0.containerAnswered(now: now) }) > 0 { wake.signal() }
    }

    /// `item` is not ready before `delay` from now (see `EngineDelay` for the engine's delays).
    func postpone(_ item: OutboxItem, by delay: Duration) {
        let now = clock()
        queue.withLock { $0.postpone(item, until: now + delay.inNanoseconds) }
    }

    /// `id` is ready now (see `UploadQueue.expedite`).
    func expedite(_ id: FileID) {
        let now = clock()
        queue.withLock { $0.expedite(id, now: now) }
        wake.signal()
    }

    func remove(_ id: FileID) -> MetadataChange {
        queue.withLock { $0.remove(id) }
        return .outboxRemove(id)
    }

    /// Every waiting item becomes ready now.
    func expediteAll() {
        let now = clock()
        queue.withLock { $0.expediteAll(now: now) }
        wake.signal()
    }

    /// Blocks until something may be ready or `timeout` passed; returns at once if an item is
    /// ready. For the uploader thread.
    func waitForWork(maximum timeout: Duration) {
        // "About to sleep": a change from now on signals, so none is missed between the look at
        // the queue and the wait.
        uploaderWakesAt.store(.max, ordering: .sequentiallyConsistent)
        let now = clock()
        let next = queue.withLock { $0.nextReadyTime(now: now) }
        var delay = timeout.inNanoseconds
        if let next { delay = min(delay, max(0, next - now)) }
        if delay == 0 {
            uploaderWakesAt.store(0, ordering: .relaxed)
            return
        }
        uploaderWakesAt.store(now + delay, ordering: .sequentiallyConsistent)
        _ = wake.wait(timeout: .now() + .nanoseconds(Int(delay)))
        uploaderWakesAt.store(0, ordering: .relaxed)
    }

    /// The in-flight `item` is held (see `UploadQueue.hold`); its row stays stored. The reason is
    /// the one the verdict just given for it recorded (`noteWaiting`), else ignored.
    func hold(_ item: OutboxItem) {
        let waits = verdictsWaiting.withLock { $0.remove(item.fileID) } != nil
        queue.withLock { _ = $0.hold(item, reason: waits ? .waiting : .ignored) }
    }

    /// The ignore verdict just given for the in-flight `id` is "wait for the rules": its `hold`
    /// that follows counts it as pending, not ignored.
    func noteWaiting(_ id: FileID) { verdictsWaiting.withLock { _ = $0.insert(id) } }

    /// The ignore rules changed: the held items are looked at again now.
    func releaseHeld() {
        let now = clock()
        if queue.withLock({ $0.releaseHeld(now: now) }) > 0 { wake.signal() }
    }

    /// The ignore rules were read: the items waiting for them are looked at again now.
    func releaseWaiting() {
        let now = clock()
        if queue.withLock({ $0.releaseWaiting(now: now) }) > 0 { wake.signal() }
    }

    /// Whether the change of `id` is held as ignored (not waiting for the rules).
    func isHeld(_ id: FileID) -> Bool { queue.withLock { $0.isIgnored(id) } }

    /// Whether the change of `id` waits for the ignore rules.
    func isWaitingForRules(_ id: FileID) -> Bool { queue.withLock { $0.waiting.contains(id) } }

    /// The items held as ignored.
    var heldIDs: Set<FileID> { queue.withLock { $0.ignoredIDs } }

    /// Wakes a waiting uploader (shutdown).
    func poke() { wake.signal() }

    /// A snapshot for status reports.
    var items: [OutboxItem] { queue.withLock { Array($0.items.values) } }
    /// Every entry with a row, and every entry the ignore rules hold.
    var namedIDs: Set<FileID> { queue.withLock { Set($0.items.keys).union($0.ignoredIDs) } }
    var inFlightCount: Int { queue.withLock { $0.inFlight.count } }
    /// True while the uploader has taken the change of one of `ids` (its commit may reach the
    /// container at any moment).
    func anyInFlight(_ ids: [FileID]) -> Bool {
        queue.withLock { queue in ids.contains { queue.inFlight.contains($0) } }
    }
    /// The `seq` of the newest change queued so far (`UploadQueue.lastSeq`).
    var lastSeq: UInt64 { queue.withLock { $0.lastSeq } }
    /// How many changes are queued (without copying them).
    var count: Int { queue.withLock { $0.items.count } }
    /// How many queued changes are not held as ignored: what is still to upload.
    var activeCount: Int { queue.withLock { $0.activeCount } }
    /// The queued changes not held as ignored (a snapshot for status reports).
    var activeItems: [OutboxItem] { queue.withLock { q in q.items.values.filter { !q.isIgnored($0.fileID) } } }
}
