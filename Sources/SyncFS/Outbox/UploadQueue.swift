import SyncBackend

/// The upload queue as a pure value: which entries wait, in which order, until when.
///
/// The owner (`Outbox`) keeps it behind a lock and mirrors every change into the state database;
/// time is passed in, so tests drive it with a manual clock.
///
/// Invariants: at most one item per file ID; `seq` values are unique and increasing; an item
/// handed out by `takeNext` is *in flight* and is not handed out again until it is finished,
/// failed or postponed.
struct UploadQueue: Sendable {
    struct Policy: Sendable {
        /// How long an entry must stay unchanged before it is uploaded (lets a copy finish).
        var quietDelay: Int64
        /// First retry delay after a failure; doubled per failure up to `maximumBackoff`.
        var initialBackoff: Int64
        var maximumBackoff: Int64

        /// A burst: at least `burstChanges` local changes within `burstWindow` (an untar, a
        /// build, a `git checkout`). While one lasts, uploads wait — the folder keeps the disk
        /// and the CPUs — but never longer than `maximumBurstWait` past an item's ready time.
        var burstChanges: Int
        var burstWindow: Int64
        var maximumBurstWait: Int64

        init(
            quietDelay: Int64, initialBackoff: Int64, maximumBackoff: Int64, burstChanges: Int = 32,
            burstWindow: Int64 = Policy.standardBurstWindow.inNanoseconds,
            maximumBurstWait: Int64 = Policy.standardMaximumBurstWait.inNanoseconds
        ) {
            self.quietDelay = quietDelay
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.burstChanges = burstChanges
            self.burstWindow = burstWindow
            self.maximumBurstWait = maximumBurstWait
        }

        static let standard = Policy(
            quietDelay: standardQuietDelay.inNanoseconds, initialBackoff: standardInitialBackoff.inNanoseconds,
            maximumBackoff: standardMaximumBackoff.inNanoseconds)

        /// 0.1 s unchanged before an upload: a `cp` or an editor's save of one file ends well
        /// within it, while a human sees the change leave at once.
        @usableFromInline static let standardQuietDelay: Duration = .milliseconds(100)
        /// 1 s after a first failure, doubled per failure: a blip costs a second, an outage is
        /// not hammered.
        @usableFromInline static let standardInitialBackoff: Duration = .seconds(1)
        /// At most 5 minutes between retries of a failing item, however long it fails (the
        /// container's return wakes items waiting for it at once: `containerAnswered`).
        @usableFromInline static let standardMaximumBackoff: Duration = .seconds(300)
        /// 32 changes within 0.1 s is a burst (an untar, a build), not a person saving files.
        @usableFromInline static let standardBurstWindow: Duration = .milliseconds(100)
        /// A burst delays an item by at most 5 s past its ready time: the folder's work goes
        /// first, but a steady stream of changes never starves uploads.
        @usableFromInline static let standardMaximumBurstWait: Duration = .seconds(5)
    }

    private(set) var items: [FileID: OutboxItem] = [:]
    private(set) var inFlight: Set<FileID> = []
    /// Items held as ignored (`hold`): not handed out until their entry changes again or the
    /// ignore rules change (`releaseHeld`). Always a subset of `items`. Not stored: after a restart
    /// each is taken once and held again by the uploader's first look.
    private(set) var held: Set<FileID> = []
    /// The held items that wait for the ignore rules (a synced ignore file not read yet) rather
    /// than being ignored: still to upload, so counted as pending. A subset of `held`.
    private(set) var waiting: Set<FileID> = []
    /// Items in flight when the held ones were released (`releaseHeld`, `releaseWaiting`): the
    /// verdict they are being given may predate the new rules, so `hold` leaves them ready.
    private var releasedInFlight: Set<FileID> = []
    /// Items held as ignored that changed again (a write to an ignored file): handed out to be
    /// looked at again (a rename may have made them synced), but still counted as ignored, not
    /// as still to upload, until a verdict other than "ignored" is acted on. Disjoint from `held`.
    private(set) var recheck: Set<FileID> = []
    /// Every item's (seq, ID) in seq order, with stale pairs (item gone) dropped lazily: the
    /// scans of `takeNext` and `nextReadyTime` start from the oldest and stop early, so a queue
    /// of 100,000 items costs about as much per upload as a queue of ten.
    private var order: [(seq: UInt64, id: FileID)] = []
    private var orderStart = 0
    private var nextSeq: UInt64
    var policy: Policy
    /// Times of the latest local changes (at most `policy.burstChanges`), oldest first.
    private var recentChanges: [Int64] = []
    /// `sync` asked for everything now: bursts do not hold uploads back until the queue drains.
    private var expedited = false
    /// Items whose last attempt failed only because the container could not be reached, each with
    /// the earliest time it may go once the container answers again (the quiet delay after its
    /// latest change): `containerAnswered` cuts their backoff short. Not stored (after a restart
    /// every item is ready once its quiet delay passed anyway).
    private var waitingForContainer: [FileID: Int64] = [:]

    init(policy: Policy, restoring stored: [OutboxItem] = [], now: Int64 = 0) {
        self.policy = policy
        var highest: UInt64 = 0
        for var item in stored {
            item.readyAt = now + policy.quietDelay
            items[item.fileID] = item
            highest = max(highest, item.seq)
        }
        nextSeq = highest + 1
        order = items.values.map { ($0.seq, $0.fileID) }.sorted { $0.seq < $1.seq }
    }

    var count: Int { items.count }

    /// How many items are still to upload: those not held as ignored (waiting ones count).
    var activeCount: Int { items.count - held.count + waiting.count - recheck.count }

    /// Whether `id` is held as ignored (not waiting for the rules), or looked at again as such.
    func isIgnored(_ id: FileID) -> Bool { (held.contains(id) && !waiting.contains(id)) || recheck.contains(id) }

    /// The items held as ignored, or looked at again as such.
    var ignoredIDs: Set<FileID> { held.subtracting(waiting).union(recheck) }

    /// The `seq` of the newest item queued so far (0 if none ever was).
    var lastSeq: UInt64 { nextSeq - 1 }

    func contains(_ id: FileID) -> Bool { items[id] != nil }

    /// Records a local change of `id`; returns the item to store. A new item takes the next
    /// `seq`; a waiting item keeps its `seq`, takes a new generation and waits the quiet delay
    /// again (a file still being written keeps moving its upload back). A failing item keeps its
    /// backoff if that ends later.
    mutating func changed(_ id: FileID, now: Int64) -> OutboxItem {
        recentChanges.append(now)
        if recentChanges.count > policy.burstChanges {
            recentChanges.removeFirst(recentChanges.count - policy.burstChanges)
        }
        let readyAt = now + policy.quietDelay
        // A new change is looked at anew (a rename may have made the entry synced again); one
        // held as ignored counts as ignored meanwhile.
        if held.remove(id) != nil && waiting.remove(id) == nil { recheck.insert(id) }
        if var item = items[id] {
            if waitingForContainer[id] != nil { waitingForContainer[id] = readyAt }
            item.generation &+= 1
            item.readyAt = max(item.readyAt, readyAt)
            items[id] = item
            return item
        }
        let item = OutboxItem(
            fileID: id, seq: nextSeq, generation: 1, readyAt: readyAt, attempts: 0, lastError: nil)
        nextSeq += 1
        items[id] = item
        order.append((item.seq, id))
        return item
    }

    /// True while local changes come in a burst (see `Policy.burstChanges`).
    func isBursting(now: Int64) -> Bool {
        guard !expedited, recentChanges.count >= policy.burstChanges, let oldest = recentChanges.first else {
            return false
        }
        return now - oldest < policy.burstWindow
    }

    /// The ready item with the lowest `seq` that is not in flight; marks it in flight. During a
    /// burst only items that have waited `maximumBurstWait` past their ready time go.
    mutating func takeNext(now: Int64) -> OutboxItem? {
        takeReady(upTo: 1, now: now).first
    }

    /// Up to `limit` of the items `takeNext` would hand out one after another now, in `seq`
    /// order; marks them in flight. Only what is ready: never waits for more.
    mutating func takeReady(upTo limit: Int, now: Int64) -> [OutboxItem] {
        let bursting = isBursting(now: now)
        compactOrder()
        var taken: [OutboxItem] = []
        var index = orderStart
        while index < order.count && taken.count < limit {
            let (seq, id) = order[index]
            index += 1
            guard let item = items[id], item.seq == seq, !inFlight.contains(id), !held.contains(id), item.readyAt <= now
            else { continue }
            if bursting && now < item.readyAt + policy.maximumBurstWait { continue }
            inFlight.insert(id)
            releasedInFlight.remove(id)
            taken.append(item)
        }
        return taken
    }

    /// Drops stale pairs at the front, and rebuilds the order when most of it is stale.
    private mutating func compactOrder() {
        while orderStart < order.count, items[order[orderStart].id]?.seq != order[orderStart].seq {
            orderStart += 1
        }
        if orderStart > 1024 && orderStart * 2 > order.count {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }

    /// Takes `id` now, whatever its ready time (a parent that must be committed before its
    /// child). Nil if it is not queued or already in flight.
    mutating func take(_ id: FileID) -> OutboxItem? {
        guard let item = items[id], !inFlight.contains(id), !held.contains(id) else { return nil }
        inFlight.insert(id)
        releasedInFlight.remove(id)
        return item
    }

    /// The earliest time an item not in flight may become ready (during a burst: when to look
    /// again), if any.
    func nextReadyTime(now: Int64) -> Int64? {
        // The oldest items are nearly always the first ready; a bounded look suffices (a change
        // wakes the uploader anyway).
        var earliest: Int64?
        var looked = 0
        var index = orderStart
        while index < order.count && looked < 64 {
            let (seq, id) = order[index]
            index += 1
            guard let item = items[id], item.seq == seq, !inFlight.contains(id), !held.contains(id) else { continue }
            looked += 1
            earliest = min(earliest ?? item.readyAt, item.readyAt)
        }
        guard let earliest else { return nil }
        guard isBursting(now: now), let oldest = recentChanges.first else { return earliest }
        // Check again when the burst may have ended, or when the earliest item's wait is over.
        return max(earliest, min(oldest + policy.burstWindow, earliest + policy.maximumBurstWait))
    }

    /// The upload of `item` succeeded. Removes it unless it changed meanwhile; returns whether it
    /// was removed.
    @discardableResult
    mutating func succeeded(_ item: OutboxItem) -> Bool {
        inFlight.remove(item.fileID)
        waitingForContainer[item.fileID] = nil
        defer { if items.isEmpty { drained() } }
        guard let current = items[item.fileID] else { return true }
        if current.generation == item.generation {
            items[item.fileID] = nil
            held.remove(item.fileID)
            waiting.remove(item.fileID)
            recheck.remove(item.fileID)
            return true
        }
        recheck.remove(item.fileID)
        var kept = current
        kept.attempts = 0
        kept.lastError = nil
        items[item.fileID] = kept
        return false
    }

    /// The upload failed; the item waits the next backoff (doubling from the initial one, capped).
    /// `reason` nil: it did not fail but waits (the container is away or busy): the attempt counts
    /// for the backoff, and any earlier reason is cleared (`lastError` is for real failures).
    /// `waitsForContainer`: it failed only because the container could not be reached, so it goes
    /// again as soon as the container answers (`containerAnswered`), whatever its backoff.
    /// Returns the item to store.
    mutating func failed(
        _ item: OutboxItem, reason: String?, now: Int64, waitsForContainer: Bool = false
    ) -> OutboxItem? {
        inFlight.remove(item.fileID)
        recheck.remove(item.fileID)
        guard var current = items[item.fileID] else { return nil }
        // Changed while it was tried: that change's quiet delay ends by `now + quietDelay`.
        let quietEnd = current.generation == item.generation ? now : now + policy.quietDelay
        waitingForContainer[item.fileID] = waitsForContainer ? quietEnd : nil
        current.attempts += 1
        current.lastError = reason
        current.readyAt = max(current.readyAt, now + backoff(afterAttempts: current.attempts))
        items[item.fileID] = current
        return current
    }

    /// The item is not ready after all (still open for writing): try again after `delay`.
    mutating func postpone(_ item: OutboxItem, until readyAt: Int64) {
        inFlight.remove(item.fileID)
        recheck.remove(item.fileID)
        guard var current = items[item.fileID] else { return }
        current.readyAt = max(current.readyAt, readyAt)
        items[item.fileID] = current
    }

    /// `id` is ready now, whatever its wait (its merge command ended: `MergeCommandWorker`).
    mutating func expedite(_ id: FileID, now: Int64) {
        guard var item = items[id] else { return }
        item.readyAt = min(item.readyAt, now)
        items[id] = item
    }

    /// Why a change is held.
    enum HoldReason: Sendable {
        /// The ignore rules ignore it.
        case ignored
        /// It waits for the ignore rules (a synced ignore file not read yet): still to upload.
        case waiting
    }

    /// The in-flight `item` is held for `reason`: it stays queued (and stored) but is not handed
    /// out again until its entry changes (`changed`) or the rules change (`releaseHeld`). Only
    /// if neither happened since it was taken (its generation is unchanged, no release came while
    /// it was in flight): otherwise the verdict may be out of date, and the item stays ready to
    /// be looked at again. Returns whether it was held.
    @discardableResult
    mutating func hold(_ item: OutboxItem, reason: HoldReason = .ignored) -> Bool {
        inFlight.remove(item.fileID)
        let released = releasedInFlight.remove(item.fileID) != nil
        guard let current = items[item.fileID], current.generation == item.generation, !released else { return false }
        recheck.remove(item.fileID)
        held.insert(item.fileID)
        if reason == .waiting { waiting.insert(item.fileID) } else { waiting.remove(item.fileID) }
        return true
    }

    /// The ignore rules changed: every held item is looked at again, at once. Returns how many.
    @discardableResult
    mutating func releaseHeld(now: Int64) -> Int {
        recheck = []
        return release(held, now: now)
    }

    /// The ignore rules were read and did not change: the items waiting for them are looked at
    /// again, at once. Returns how many.
    @discardableResult
    mutating func releaseWaiting(now: Int64) -> Int { release(waiting, now: now) }

    private mutating func release(_ ids: Set<FileID>, now: Int64) -> Int {
        releasedInFlight.formUnion(inFlight)
        for id in ids {
            guard var item = items[id] else { continue }
            item.readyAt = min(item.readyAt, now)
            items[id] = item
        }
        held.subtract(ids)
        waiting.subtract(ids)
        return ids.count
    }

    /// Drops `id` whatever its state (the change was abandoned, e.g. taken over by a remote one).
    mutating func remove(_ id: FileID) {
        items[id] = nil
        inFlight.remove(id)
        held.remove(id)
        waiting.remove(id)
        recheck.remove(id)
        waitingForContainer[id] = nil
        if items.isEmpty { drained() }
    }

    /// The queue is empty: give back the memory a large burst took (100,000 queued files).
    private mutating func drained() {
        expedited = false
        waitingForContainer = [:]
        held = []
        waiting = []
        releasedInFlight = []
        recheck = []
        items = [:]
        order = []
        orderStart = 0
    }

    /// `sync`: every waiting item is ready now (quiet delays and backoffs end).
    mutating func expediteAll(now: Int64) {
        for id in items.keys { items[id]!.readyAt = min(items[id]!.readyAt, now) }
        expedited = !items.isEmpty
    }

    /// A container call succeeded: every item that failed only because the container could not be
    /// reached is ready now (or when its quiet delay after a later change ends), not after its
    /// backoff — a container that comes back gets the queue within seconds, not minutes. Attempt
    /// counts stay, so an item that fails again backs off further. Returns how many items became
    /// ready sooner.
    mutating func containerAnswered(now: Int64) -> Int {
        guard !waitingForContainer.isEmpty else { return 0 }
        var sooner = 0
        for (id, earliest) in waitingForContainer {
            // An item in flight is being tried right now; a new failure marks it again.
            guard var item = items[id], !inFlight.contains(id) else { continue }
            let readyAt = max(earliest, now)
            if readyAt < item.readyAt {
                item.readyAt = readyAt
                items[id] = item
                sooner += 1
            }
        }
        waitingForContainer = [:]
        return sooner
    }

    /// The delay before attempt `attempts + 1`.
    func backoff(afterAttempts attempts: Int) -> Int64 {
        guard attempts > 0 else { return 0 }
        var delay = policy.initialBackoff
        for _ in 1..<attempts {
            if delay >= policy.maximumBackoff / 2 { return policy.maximumBackoff }
            delay *= 2
        }
        return min(delay, policy.maximumBackoff)
    }
}
