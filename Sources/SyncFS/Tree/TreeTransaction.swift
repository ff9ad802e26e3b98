import SyncBackend

/// The tree inside `LiveTree.transact`: the `Namespace` itself plus what this transaction has
/// changed so far (metadata changes, after-commit actions, change events, kernel invalidations).
///
/// Only `LiveTree` makes one, and only inside its lock; so a function that takes an
/// `inout TreeTransaction` (or is a method of it) runs under the namespace lock by construction.
/// The namespace's own members are forwarded (`tree.nodes`, `tree.node(withID:)`, …); the
/// helpers that used to say "under the lock" are its methods (see `TreeTransaction+Records`).
struct TreeTransaction {
    private(set) var namespace: Namespace
    let store: MetadataStore
    let cache: ContentCache
    let outbox: Outbox
    let changeEvents: ChangeEvents
    let rulesWatch: RulesWatch
    private var changes: [MetadataChange] = []
    private var afterCommitActions: [@Sendable () -> Void] = []
    private var events: [ChangeEvent] = []
    private var invalidations: [KernelInvalidation] = []

    init(
        namespace: consuming Namespace, store: MetadataStore, cache: ContentCache, outbox: Outbox,
        changeEvents: ChangeEvents, rulesWatch: RulesWatch
    ) {
        self.namespace = namespace
        self.store = store
        self.cache = cache
        self.outbox = outbox
        self.changeEvents = changeEvents
        self.rulesWatch = rulesWatch
    }

    // MARK: Collecting

    /// Records metadata changes; they reach the store in one batch with the transaction's others.
    mutating func record(_ change: MetadataChange) { changes.append(change) }
    mutating func record(_ more: [MetadataChange]) { changes.append(contentsOf: more) }

    /// Runs `action` once every change recorded so far (this transaction's included) is committed.
    mutating func afterCommit(_ action: @escaping @Sendable () -> Void) { afterCommitActions.append(action) }

    /// Commits every change recorded so far (the store's earlier ones, then this transaction's)
    /// to the state database now, under the namespace lock (lock order namespace →
    /// store.connection; see `LiveTree`). For what must be in the database before a cache file
    /// changes (`commitSizeAhead`). Survives the daemon's kill -9, not a power loss.
    mutating func commitRecordedNow() throws {
        handChangesToStore()
        try store.commit(durable: false)
    }

    /// Publishes `event` when the transaction ends (still in the tree's order).
    mutating func publish(_ event: ChangeEvent) { events.append(event) }

    /// Tells the kernel, after unlocking, that what it cached is stale. Until it is told, calls by
    /// the name refuse to act on it (`UnannouncedNames`).
    mutating func invalidate(_ invalidation: KernelInvalidation) {
        if let (parent, name) = invalidation.name { namespace.unannouncedNames.collected(parent: parent, name: name) }
        invalidations.append(invalidation)
    }

    /// The names of `invalidations` reached the kernel (`LiveTree.perform`).
    mutating func announced(_ invalidations: [KernelInvalidation]) {
        for case (let parent, let name)? in invalidations.lazy.map(\.name) {
            namespace.unannouncedNames.sent(parent: parent, name: name)
        }
    }

    /// Hands the invalidations collected so far to the caller instead of sending them at the end
    /// (the echo: a FUSE handler applying a change for the follower must not send invalidations
    /// while the kernel serves the echo's request; the follower sends them afterwards).
    mutating func takeInvalidations() -> [KernelInvalidation] {
        defer { invalidations = [] }
        return invalidations
    }

    /// Ends the transaction: records, registers and publishes (see `LiveTree`), and returns the
    /// invalidations to send once unlocked. Only `LiveTree.transact` calls it.
    mutating func publishCollected() -> [KernelInvalidation] {
        // Files settle without telling; `status` drops them too, this bounds the set without it.
        if namespace.inMotion.count > Self.inMotionBound { namespace.settleInMotion() }
        handChangesToStore()
        namespace.bases.settle()
        if !afterCommitActions.isEmpty {
            for action in afterCommitActions { store.afterCommit(action) }
            afterCommitActions = []
        }
        if !events.isEmpty {
            for event in events { changeEvents.publish(event) }
            events = []
        }
        return takeInvalidations()
    }

    /// Hands the changes recorded so far to the store as one batch.
    private mutating func handChangesToStore() {
        guard !changes.isEmpty else { return }
        recountRecorded()
        namespace.bases.handed(store.record(changes))
        changes = []
    }

    /// How many files may be in motion before a transaction drops the settled ones.
    static let inMotionBound = 1024

    /// Recounts every entry this transaction recorded (`TreeCounts`' contract).
    private mutating func recountRecorded() {
        for change in changes {
            let ino: InodeNumber
            switch change {
            case .upsert(let record): ino = record.ino
            case .delete(let deleted): ino = deleted
            default: continue
            }
            if let node = namespace.nodes[ino] { namespace.recount(node) }
        }
    }

    // MARK: The namespace, forwarded

    var nodes: [InodeNumber: Node] {
        _read { yield namespace.nodes }
        _modify { yield &namespace.nodes }
    }
    var byFileID: [FileID: InodeNumber] {
        _read { yield namespace.byFileID }
        _modify { yield &namespace.byFileID }
    }
    var inodes: InodeTable {
        _read { yield namespace.inodes }
        _modify { yield &namespace.inodes }
    }
    var nextIno: UInt64 { namespace.nextIno }
    /// Read a base here; change it with `setBase`/`removeBase`, which record the change.
    var bases: SyncBases { namespace.bases }
    /// Sets the sync base of `id` and records it, with the entry `state` of that version when
    /// known (kept in the database only: `MetadataStore.baseState`).
    mutating func setBase(_ id: FileID, _ base: SyncBase, state: EntryState? = nil) {
        namespace.bases.set(id, base)
        record(.syncBaseSet(id, base, state: state))
    }
    /// Removes the sync base of `id` and records it.
    mutating func removeBase(_ id: FileID) {
        namespace.bases.set(id, nil)
        record(.syncBaseRemove(id))
    }
    var conflictCopies: [FileID: FileID] {
        _read { yield namespace.conflictCopies }
        _modify { yield &namespace.conflictCopies }
    }

    var counts: TreeCounts { namespace.counts }
    var inMotion: Set<InodeNumber> {
        _read { yield namespace.inMotion }
        _modify { yield &namespace.inMotion }
    }
    mutating func recount(_ node: Node) { namespace.recount(node) }
    mutating func settleInMotion() { namespace.settleInMotion() }
    func staleTallies() -> [Node] { namespace.staleTallies() }
    /// A handle that may write `node` opened: its writes change its state and size without the
    /// lock, so `status` looks at it apart until it is closed (`TreeCounts`).
    mutating func noteWriterOpened(_ node: Node) {
        node.openWriters += 1
        namespace.inMotion.insert(node.ino)
    }

    var unannouncedNames: UnannouncedNames {
        _read { yield namespace.unannouncedNames }
        _modify { yield &namespace.unannouncedNames }
    }
    func refuseIfUnannounced(_ parent: InodeNumber, _ name: FileName) throws(FSError) {
        try namespace.refuseIfUnannounced(parent, name)
    }

    var excludedFolders: Set<FileID> {
        _read { yield namespace.excludedFolders }
        _modify { yield &namespace.excludedFolders }
    }

    mutating func allocateIno() -> InodeNumber { namespace.allocateIno() }
    func node(_ ino: InodeNumber) throws(FSError) -> Node { try namespace.node(ino) }
    func directory(_ ino: InodeNumber) throws(FSError) -> Node { try namespace.directory(ino) }
    func child(of parent: Node, named name: FileName) -> Node? { namespace.child(of: parent, named: name) }
    mutating func attach(_ node: Node, to parent: Node, as name: FileName) {
        namespace.attach(node, to: parent, as: name)
    }
    func liveDirectory(withID id: FileID) -> Node? { namespace.liveDirectory(withID: id) }
    func node(withID id: FileID) -> Node? { namespace.node(withID: id) }
    mutating func detach(_ node: Node) { namespace.detach(node) }
    /// Takes an unlinked, unreferenced node out of the tree (`Namespace.releaseIfUnused`); use
    /// `releaseIfUnused(_:)`, which also removes its cache file once that is committed.
    mutating func dropIfUnused(_ ino: InodeNumber) -> Node? { namespace.releaseIfUnused(ino) }
    func isSameOrBelow(_ candidate: Node, _ ancestor: Node) -> Bool { namespace.isSameOrBelow(candidate, ancestor) }
    func isExcluded(_ node: Node) -> Bool { namespace.isExcluded(node) }
    func isExcludedFolder(_ node: Node) -> Bool { namespace.isExcludedFolder(node) }
    func holdsExcludedFolder(_ directory: Node) -> Bool { namespace.holdsExcludedFolder(directory) }
}
