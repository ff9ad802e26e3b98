import SyncBackend
import Synchronization

/// What each synced entry last agreed with the container (`SyncBase`): the state database holds
/// them all; memory holds only the ones not yet committed and a bounded cache of recent reads, so
/// it does not grow with the container.
///
/// Contract: used only under the namespace lock (it lives in `Namespace`). A base changes only
/// through `set` and `remove`, which `TreeTransaction` pairs with the change it records. A
/// changed base stays in memory until the store has committed the batch that carries it
/// (`handed`, `settle`, `MetadataStore.committedThrough`): nothing leaves memory before it is in
/// the database, so a read either finds it here or reads the committed row.
///
/// A read for an ID that has never had a committed base (a new remote entry) is answered from a
/// filter of the committed IDs (`BaseIDFilter`), without the database.
///
/// A read the database fails (an I/O error, a damaged page) stops the daemon: there is no safe
/// answer without the base — "none" would make a synced file look new or a deleted one unknown.
/// Everything committed stays; the next mount starts from it.
final class SyncBases: @unchecked Sendable {
    private let store: MetadataStore
    /// Bases set or removed since their batch was last committed: nil for a removed one. The
    /// ticket is the store's for the batch carrying the change (0 until it is handed over).
    private var uncommitted: [FileID: (base: SyncBase?, ticket: UInt64)] = [:]
    /// IDs changed in the running transaction, whose batch has no ticket yet.
    private var unhanded: [FileID] = []
    /// Changes handed to the store, oldest first, to drop once committed (from `settlingStart`).
    private var settling: [(id: FileID, ticket: UInt64)] = []
    private var settlingStart = 0
    /// Recently read committed bases (nil: known to have none), in two generations: a read
    /// moves an entry into `recent`; when `recent` is full it becomes `older`, whose entries are
    /// forgotten unless read again first.
    private var recent: [FileID: SyncBase?] = [:]
    private var older: [FileID: SyncBase?] = [:]
    /// How many entries have a base (the committed rows counted at mount, kept up to date).
    private(set) var count = 0
    /// Every ID that may have a committed row: those the pass at mount read, and every ID given a
    /// base since. Once the pass is done (`loaded`), an ID it rules out is read as none without
    /// asking the database.
    private var mayBeCommitted = BaseIDFilter()
    private var filterComplete = false

    /// How many reads each cache generation keeps.
    static let cacheGeneration = 8_192

    /// Counts nothing until the pass at mount (`noteCommitted`, `loaded`).
    init(store: MetadataStore) { self.store = store }

    /// The pass at mount read the committed base of `id` (`loaded` follows): counted and noted.
    func noteCommitted(_ id: FileID) {
        mayBeCommitted.insert(id)
        count += 1
    }

    /// The pass at mount noted every committed base, and none is changed yet.
    func loaded() {
        precondition(uncommitted.isEmpty, "bases are counted before any changes")
        filterComplete = true
    }

    /// The base of `id`, nil if it has none.
    subscript(id: FileID) -> SyncBase? {
        if let pending = uncommitted[id] { return pending.base }
        if let cached = recent[id] { return cached }
        if let cached = older[id] {
            remember(id, cached)
            return cached
        }
        if filterComplete && !mayBeCommitted.mayContain(id) { return nil }
        let read: SyncBase?
        do {
            read = try store.syncBase(of: id)
        } catch {
            fatalError("the state database cannot be read (the sync base of \(id)): \(error)")
        }
        remember(id, read)
        return read
    }

    /// Sets the base of `id`. Only `TreeTransaction.setBase`, which records it, calls this.
    func set(_ id: FileID, _ base: SyncBase?) {
        let had = self[id] != nil
        count += (base != nil ? 1 : 0) - (had ? 1 : 0)
        if base != nil { mayBeCommitted.insert(id) }
        uncommitted[id] = (base, 0)
        unhanded.append(id)
    }

    /// `id` was just made here (a new local entry, a conflict copy): it has no base, and a read
    /// need not ask the database.
    func minted(_ id: FileID) { remember(id, nil) }

    /// The changes of the running transaction went to the store in the batch with `ticket`.
    func handed(_ ticket: UInt64) {
        guard !unhanded.isEmpty else { return }
        for id in unhanded where uncommitted[id]?.ticket == 0 {
            uncommitted[id]?.ticket = ticket
            settling.append((id, ticket))
        }
        unhanded.removeAll(keepingCapacity: true)
    }

    /// Forgets the changes the store has committed (their rows answer reads from now on).
    func settle() {
        guard settlingStart < settling.count else { return }
        let through = store.committedThrough.load(ordering: .acquiring)
        while settlingStart < settling.count, settling[settlingStart].ticket <= through {
            let (id, ticket) = settling[settlingStart]
            settlingStart += 1
            // A later change of the same base waits for its own batch.
            guard let pending = uncommitted[id], pending.ticket == ticket else { continue }
            uncommitted[id] = nil
            remember(id, pending.base)
        }
        if settlingStart == settling.count {
            settling.removeAll(keepingCapacity: settling.count <= 4 * Self.cacheGeneration)
            settlingStart = 0
        } else if settlingStart > 1_024 && settlingStart * 2 > settling.count {
            settling.removeFirst(settlingStart)
            settlingStart = 0
        }
    }

    /// How many changes wait for their commit (tests: nothing stays once committed).
    var uncommittedCount: Int { uncommitted.count }
    /// How many reads the cache keeps (tests: it stays bounded).
    var cachedCount: Int { recent.count + older.count }

    /// The version of every base whose ID passes `include`: the committed rows read in one
    /// pass, the uncommitted changes over them.
    func versions(where include: (FileID) -> Bool) -> [FileID: EntryVersion] {
        var versions: [FileID: EntryVersion] = [:]
        do {
            try store.forEachSyncBaseVersion { id, version in
                if uncommitted[id] == nil && include(id) { versions[id] = version }
            }
        } catch {
            fatalError("the state database cannot be read (the sync bases): \(error)")
        }
        for (id, pending) in uncommitted where include(id) { versions[id] = pending.base?.version }
        return versions
    }

    private func remember(_ id: FileID, _ base: SyncBase?) {
        if recent.count >= Self.cacheGeneration {
            older = recent
            recent = [:]
            recent.reserveCapacity(Self.cacheGeneration)
        }
        recent[id] = base
    }
}
