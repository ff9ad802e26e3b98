import Glibc
import Logging
import SyncBackend
import Synchronization

/// The folder as Swift calls: lookup, read, write, rename… — the whole filesystem without FUSE.
///
/// The FUSE adapter (`FUSE/`) translates kernel requests into these calls and their results into
/// replies; tests call them directly. The names and attributes of entries and the echo's
/// requests are its own (`SyncFileSystem+*.swift`); the rest is done by components it assembles,
/// which the adapter calls directly: `opener` (create, open), `reads` (the read path), `fileIO`
/// (the data path of open files), `truncations`, `listings` (open directories), `xattrs`, and
/// the content's `residency`.
///
/// Concurrency: FUSE worker threads call in synchronously. All tree state sits behind one lock
/// (`live`, a `LiveTree`: its header has the whole lock hierarchy); no lock is held across disk I/O
/// on content (reads and writes go straight to the handle's cache file descriptor).
/// Durability: metadata changes go to `MetadataStore` (written behind, in order); content goes
/// to the cache file. `fsync` makes both durable.
final class SyncFileSystem: Sendable {
    /// The tree and its lock; every read and change of it goes through `live.transact`.
    let live: LiveTree
    let store: MetadataStore
    let cache: ContentCache
    let logger: Logger
    /// Where the cache lives, for `statfs`.
    let statePath: String
    /// Empty cache files made ahead of time for `create`.
    let spares: SpareCacheFiles
    /// Local changes waiting for upload.
    let outbox: Outbox
    /// This state directory's device ID (the `device_id` fact), stamped on its commits.
    let deviceIdentity: String
    /// This mount's name in conflict copies (the `device_name` fact; `DeviceName`).
    let deviceName: DeviceName
    /// Facts read at mount (feed cursor, deferred remote changes) for the sync engine.
    let storedFacts: StateFacts
    /// Observers of every change (`syncfs-mount events`) and their journal; see `ChangeEvents`.
    let changeEvents: ChangeEvents
    /// The rules files' errors (`RulesWatch`), checked again when one changes.
    let rulesWatch = RulesWatch()
    /// The ignore rules in force (`MountIgnores`); nothing is ignored until the mount configures it.
    let ignores = MountIgnores()
    /// Where content lives: placeholders, downloads, pins, eviction, visible states.
    let residency: ContentResidency
    /// The read path: are a READ's bytes in the cache file, or what to wait for.
    let reads: ReadPath
    /// Opening regular files: create, and open once the echo's requests are set apart.
    let opener: FileOpener
    /// The data path of open files: write, flush, fsync, fallocate, lseek, release.
    let fileIO: OpenFileIO
    /// Cuts of content (`setattr` with a size, `O_TRUNC`), recorded before the cache file shrinks.
    let truncations: Truncations
    /// The listings of open directories.
    let listings: DirectoryListing
    /// Extended attributes, stored and virtual.
    let xattrs: ExtendedAttributes
    /// What the types that hold the tree share (`HoldsTheTree`).
    let parts: FolderParts
    /// The inotify echo's seam (`EchoRequests`): its thread's calls on the mount told apart and
    /// answered; its channel started, stopped and shared with the follower.
    let echo: EchoRequests
    /// Remote modes keep their setuid and setgid bits (`mount --allow-remote-setuid`); off by
    /// default: see `RemoteChanges.appliedMode`.
    let remoteSetuid = SharedFlag()
    /// What the container lets this mount change (`WriteAccess`): while it grants a viewer's
    /// rights only, the FUSE adapter refuses every change (EROFS) and nothing is uploaded.
    let writeAccess = WriteAccess()

    func allowRemoteSetuid(_ allowed: Bool) { remoteSetuid.set(allowed) }

    /// Transfers in progress and transfer failures, per entry.
    var transfers: TransferBoard { residency.transfers }

    /// Set by the FUSE adapter when the session exists; see `KernelCacheInvalidating`.
    func setInvalidator(_ value: any KernelCacheInvalidating) { live.setInvalidator(value) }

    /// Loads the tree from `store`, checks it against the cache and repairs what a crash left:
    /// entries outside the tree are removed, cache files without an entry deleted, file sizes
    /// taken from their cache files (which hold every byte written before the crash).
    init(
        store: MetadataStore, cache: ContentCache, statePath: String, logger: Logger,
        uploadPolicy: UploadQueue.Policy = .standard, clock: @escaping @Sendable () -> Int64 = Clock.nowNanoseconds,
        deviceName requestedName: DeviceName? = nil
    ) throws {
        self.store = store
        self.cache = cache
        self.statePath = statePath
        self.logger = logger
        let stored = try store.load()
        outbox = Outbox(policy: uploadPolicy, restoring: stored.outbox, clock: clock)
        storedFacts = stored.facts
        // Before anything is recorded or the cache reconciled: a lost database is not a new one.
        try UsedStateGuard.check(stored, cache: cache, statePath: statePath)
        if let device = storedFacts[.deviceID] {
            deviceIdentity = device
        } else {
            deviceIdentity = FileID.random().hex
            store.factSet(.deviceID, deviceIdentity)
        }
        deviceName =
            requestedName ?? storedFacts[.deviceName]
            ?? DeviceName.standard(hostName: ConflictNames.hostName, deviceID: deviceIdentity)
        if storedFacts[.deviceName] != deviceName { store.factSet(.deviceName, deviceName) }
        let generation = (storedFacts[.mountCount] ?? 0) + 1
        store.factSet(.mountCount, generation)

        var tree = try Namespace.load(
            stored, generation: generation, store: store, cache: cache, outbox: outbox, logger: logger)
        WriteFailures.restore(storedFacts[.writeFailures], in: &tree)
        changeEvents = ChangeEvents(
            journal: EventJournal.open(directory: statePath, anew: generation == 1, logger: logger))
        let echoChannel = EchoChannel()
        live = LiveTree(
            tree, store: store, cache: cache, outbox: outbox, changeEvents: changeEvents, rulesWatch: rulesWatch,
            ownMountCalls: echoChannel)
        echo = EchoRequests(channel: echoChannel, live: live, cache: cache)
        parts = FolderParts(
            live: live, cache: cache, logger: logger, deviceIdentity: deviceIdentity, deviceName: deviceName)
        residency = ContentResidency(parts: parts)
        reads = ReadPath(live: live, residency: residency)
        fileIO = OpenFileIO(parts: parts, residency: residency, changeEvents: changeEvents)
        truncations = Truncations(parts: parts, residency: residency)
        listings = DirectoryListing(live: live)
        xattrs = ExtendedAttributes(live: live, residency: residency)
        spares = SpareCacheFiles(cache: cache)
        opener = FileOpener(parts: parts, residency: residency, truncations: truncations, spares: spares)
        try store.commit(durable: true)
    }

    /// Commits everything and closes the store. Call once, after the FUSE session ended.
    func shutDown() throws {
        defer { changeEvents.journal?.close() }
        // The engine is stopped: running downloads fail fast; let them record before closing.
        residency.hydrations.waitForDownloads(seconds: 10)
        spares.close()
        live.transact { tree in
            for node in tree.nodes.values {
                if node.takeUnrecordedWrites(), !node.isUnlinked { tree.recordLocalChange(node) }
                // A burst whose last close the session never delivered ends here: its `modified`
                // event goes to the journal before it closes.
                tree.noteContentChangeEnded(node)
            }
        }
        try store.close()
    }
}
