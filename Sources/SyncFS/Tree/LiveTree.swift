import Glibc
import SyncBackend
import Synchronization

/// The folder's tree as it runs: the one lock over it, and the only way to read or change it
/// (`transact`).
///
/// `LiveTree` owns the namespace lock, the metadata store, the kernel invalidator and the events
/// hub. Every reader and writer of the tree — the kernel's operations (`SyncFileSystem`), the
/// follower (`RemoteChanges`), the uploader (`UploadRecords`), merges (`ConflictAdoption`) and
/// residency (`ContentResidency`) — holds this one object and goes through `transact`, which hands
/// it an `inout TreeTransaction`. What must happen "under the lock" is a method of
/// `TreeTransaction`, so the compiler, not a comment, checks that the lock is held.
///
/// A transaction collects what it changed and publishes it in one place, in this order:
/// 1. under the lock, at its end: its metadata changes are handed to the store as ONE batch (so
///    the store's order is the tree's order, and a crash shows all or none of them), then its
///    after-commit actions are registered (so they run only once that batch is committed), then
///    its change events go to the hub (in the tree's order: every watcher sees them as they
///    happened; the hub only enqueues);
/// 2. after unlocking: its kernel invalidations are sent (the kernel may answer one with requests
///    of its own, which need the lock).
/// Effects are published even when the body throws: whatever it changed in the tree before
/// throwing stays changed, and the store must agree with the tree.
///
/// # Lock hierarchy (the whole of it; every other description points here)
/// Locks are taken only in this order, never the reverse:
/// 1. `InotifyEcho.turn` — the follower's echo turn (one remote change through the mount at a
///    time). Held across calls into the mount, so nothing below may be held when taking it.
/// 2. The namespace lock (this type's `state`) — the tree, its nodes' `var`s, the kernel's
///    references (`InodeTable`), the sync bases, the conflict index.
/// 3. Short leaf locks, taken inside the namespace lock or alone, never holding another:
///    `InotifyEcho.pending` (the echo's pending change), `Outbox`'s queue lock, `TransferBoard`,
///    `Hydration`'s state lock, `Node.identity`, `ChangeEvents`' subscriber list and each
///    `ChangeSubscription`'s buffer, `SpareCacheFiles`, `RulesWatch`; and, taken by `perform`
///    without the namespace lock, the invalidator slot, `EchoChannel`'s slot and `InotifyEcho`'s
///    condition.
/// 4. The metadata store: `MetadataStore.pending` (a leaf, taken by `record` inside the
///    namespace lock) and `MetadataStore.connection` (the SQLite connection; taken by the
///    flusher and `commit` *without* the namespace lock — except `commitRecordedNow`, which
///    commits inside it — and it takes `pending` briefly inside). So: namespace →
///    store.pending, namespace → store.connection → store.pending; never store.connection →
///    namespace (a commit's after-commit actions only remove cache files). And
///    `MetadataStore.reader` (a second connection to the same file), a leaf taken inside the
///    namespace lock to read sync bases (`SyncBases`): it never waits for a commit.
/// Never held across a call into the kernel (`KernelCacheInvalidating`, a path below the mount):
/// the namespace lock and every lock of level 3 and 4. And no entry invalidation is sent while a call
/// of the echo thread is in the kernel (`perform` waits in user space): it would wait in the kernel
/// for a directory lock that call holds. Content I/O (reads and writes of cache
/// files) takes no lock at all; it is ordered by each node's content seqlock
/// (`Node.beginContentChange`).
final class LiveTree: Sendable {
    let store: MetadataStore
    let cache: ContentCache
    /// Local changes waiting for upload (rows recorded in the same batch as the change).
    let outbox: Outbox
    /// Observers of every change (`syncfs-mount events`).
    let changeEvents: ChangeEvents
    /// The rules files' errors, checked again when one changes.
    let rulesWatch: RulesWatch
    private let state: Mutex<TreeTransaction>
    /// Set by the FUSE adapter when the session exists; see `KernelCacheInvalidating`.
    private let invalidator = Mutex<(any KernelCacheInvalidating)?>(nil)
    /// The inotify echo's calls on the mount, which entry invalidations wait for (`perform`).
    private let ownMountCalls: any OwnMountCalls
    /// The container version of the newest change-feed entry the follower has begun to apply
    /// (0 until it does; in memory only). The feed lists each entry once, at its newest version,
    /// in version order: once the follower has reached version `v`, no version older than `v` of
    /// an entry whose newest version was `v` when the follower read its batch can arrive any more
    /// (`UploadRecords.uploadCommitted` keeps a deleted entry's tombstone as its base until then).
    let feedReached = Atomic<UInt64>(0)
    /// The container version of the newest change-feed entry the follower is done with (applied,
    /// or deferred, and the kernel's caches invalidated; 0 until then; in memory only): a
    /// command that made a version in the container (`restore`) waits for it, so the folder
    /// shows that version when the command returns (`AwaitedVersion.wait`).
    let feedHandled = AwaitedVersion()

    init(
        _ namespace: consuming Namespace, store: MetadataStore, cache: ContentCache, outbox: Outbox,
        changeEvents: ChangeEvents, rulesWatch: RulesWatch, ownMountCalls: any OwnMountCalls
    ) {
        self.ownMountCalls = ownMountCalls
        self.store = store
        self.cache = cache
        self.outbox = outbox
        self.changeEvents = changeEvents
        self.rulesWatch = rulesWatch
        state = Mutex(
            TreeTransaction(
                namespace: namespace, store: store, cache: cache, outbox: outbox, changeEvents: changeEvents,
                rulesWatch: rulesWatch))
    }

    /// Runs `body` under the namespace lock with the tree, then publishes what it collected
    /// (see the type's documentation for the order). Do not call from inside another
    /// transaction (the lock is not recursive) or with a lock of level 3 or 4 held.
    @discardableResult
    func transact<Result, Failure: Error>(
        _ body: (inout TreeTransaction) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let (outcome, invalidations) = state.withLock { transaction in
            let outcome: Swift.Result<Result, Failure>
            do throws(Failure) {
                outcome = .success(try body(&transaction))
            } catch {
                outcome = .failure(error)
            }
            return (outcome, transaction.publishCollected())
        }
        perform(invalidations)
        return try outcome.get()
    }

    /// The path of the entry with `id` below the mount point, if it is in the tree.
    func displayPath(of id: FileID) -> String? {
        transact { tree in tree.node(withID: id).map { tree.displayPath(of: $0) } }
    }

    func setInvalidator(_ value: any KernelCacheInvalidating) { invalidator.withLock { $0 = value } }

    /// Sends invalidations to the kernel. Never call inside a transaction.
    ///
    /// An entry invalidation (a name added, removed or now elsewhere) takes its directory's lock in
    /// the kernel, which a call of the echo thread may hold while it waits for this daemon's
    /// answer: sent then, the notifying thread would wait in the kernel for that answer, which
    /// never comes once the session's loop has ended — nor after a kill, as the waiting writer
    /// keeps `/dev/fuse` from being released. So entry invalidations are sent only while no echo
    /// call is in the kernel, and no echo call enters it meanwhile
    /// (`OwnMountCalls.whileNoCallInKernel`); once the echo stopped with its call stuck in the
    /// kernel, they are dropped. Only engine threads send entry invalidations (the echo's own,
    /// applied by a FUSE handler, are sent by the follower after its call). Attribute and content
    /// invalidations take no directory lock and go at once.
    ///
    /// Once a name's invalidation was sent (or there is no kernel to tell), calls by that name act
    /// on it again (`UnannouncedNames`).
    func perform(_ invalidations: [KernelInvalidation]) {
        guard !invalidations.isEmpty else { return }
        guard let kernel = invalidator.withLock({ $0 }) else { return announced(invalidations) }
        guard invalidations.contains(where: \.takesDirectoryLock) else { return send(invalidations, to: kernel) }
        let sent = ownMountCalls.whileNoCallInKernel { send(invalidations, to: kernel) }
        if sent {
            announced(invalidations)
        } else {
            send(invalidations.filter { !$0.takesDirectoryLock }, to: kernel)
        }
    }

    private func announced(_ invalidations: [KernelInvalidation]) {
        guard invalidations.contains(where: \.takesDirectoryLock) else { return }
        state.withLock { $0.announced(invalidations) }
    }

    private func send(_ invalidations: [KernelInvalidation], to kernel: any KernelCacheInvalidating) {
        for invalidation in invalidations {
            switch invalidation {
            case .entry(let parent, let name): kernel.entryChanged(parent: parent, name: name)
            case .attributes(let ino): kernel.attributesChanged(ino)
            case .content(let ino): kernel.writeBackPages(ino)
            case .deleted(let parent, let child, let name):
                kernel.entryDeleted(parent: parent, child: child, name: name)
            }
        }
    }
}
