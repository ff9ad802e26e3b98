import Glibc
import Logging
import SyncBackend

/// What the uploader must do for one queued entry (see `UploadRecords.prepareUpload`).
enum UploadWork: Sendable {
    /// Commit the entry's current state.
    case put(UploadSnapshot)
    /// The entry is gone locally: commit a delete against `base`.
    case delete(base: EntryVersion)
    /// Gone locally and never committed: nothing to do (a temporary file costs nothing).
    case nothing
    /// Open for writing or being written: try again after the quiet delay.
    case busy
    /// The content state gives no upload permit (`ContentLifecycle`: lost content, a failed
    /// write): the change stays queued, shown as an error with this reason; nothing is sent.
    case refused(String)
}

/// An entry's state taken for upload. For files, `content` is an open descriptor of the cache
/// file; the uploader reads it without a lock and keeps what it read only if
/// `SyncFileSystem.contentUnchanged` says no write began meanwhile.
struct UploadSnapshot: @unchecked Sendable {
    var id: FileID
    /// The state to commit; `manifest` is filled in by the uploader from `content`.
    var state: EntryState
    var base: SyncBase?
    /// The parent, if it has never been committed (commit it first).
    var uncommittedParent: FileID?
    var content: ContentSnapshot?
}

/// The cache file of a file being uploaded. The uploader closes `descriptor`.
struct ContentSnapshot: @unchecked Sendable {
    var descriptor: Int32
    var length: Int64
    let node: Node
    let token: UInt64
}

/// The uploader's side of the tree: what to commit for a queued entry (`prepareUpload`), and
/// recording what the container answered (new bases, outbox rows done or failed, names moved
/// aside), each in one transaction.
final class UploadRecords: Sendable, HoldsTheTree {
    let parts: FolderParts
    /// Told when an upload leaves a file clean (the cache budget may evict it now).
    private let residency: ContentResidency
    /// The ignore rules the uploader's takes are decided by (`ignoreVerdict`).
    let ignores: MountIgnores

    init(fileSystem: SyncFileSystem) {
        parts = fileSystem.parts
        residency = fileSystem.residency
        ignores = fileSystem.ignores
    }
}

extension UploadRecords {
    /// Takes what the uploader needs for `id`, in one transaction. `taking`: the uploader's
    /// take, which makes a file `uploading` until its upload ends (`uploadCommitted`,
    /// `uploadReturned`); false for a look that uploads nothing of its own (the guard's `discard`
    /// reading a rewrite): the same answer, and the file's state stays as it was.
    func prepareUpload(_ id: FileID, taking: Bool = true) -> UploadWork {
        live.transact { tree -> UploadWork in
            let base = tree.bases[id]
            guard let node = tree.node(withID: id), !node.isUnlinked else {
                guard let base, base.version > 0 else { return .nothing }
                return .delete(base: base.version)
            }
            var parentID: FileID?
            if node.ino != .root {
                guard let parentIno = node.parent, let parent = tree.nodes[parentIno] else { return .nothing }
                parentID = parent.fileID
            }
            var content: ContentSnapshot?
            let size = node.size.load(ordering: .relaxed)
            var knownManifest: [ChunkRef] = []
            if node.kind == .file {
                // What may be sent is the content state machine's answer: taking the file gives
                // a permit only in a state that may upload (never lost content or a failed
                // write). The file is `uploading` until the upload ends (`uploadCommitted`,
                // `uploadReturned`).
                let permit: ContentLifecycle.UploadPermit
                switch takeForUpload(node, taking: taking) {
                case .permit(let granted): permit = granted
                case .refused(let reason): return .refused(reason)
                }
                switch permit.content {
                case .knownManifest:
                    // Only metadata changed (content cannot change without a download): the
                    // container's content stays.
                    guard let manifest = node.retiredManifest ?? base?.manifest else { return .nothing }
                    knownManifest = manifest
                case .cacheFile:
                    guard node.openWriters == 0, let token = node.contentToken() else { return .busy }
                    let descriptor = Glibc.open(cache.path(for: id), O_RDONLY | O_CLOEXEC)
                    // Never upload what cannot be vouched for: a missing or short cache file
                    // makes the file `lost` (`ContentLifecycle.cacheFileDamaged`).
                    if let reason = lostContent(node, descriptor: descriptor, recorded: size) {
                        if descriptor >= 0 { close(descriptor) }
                        return .refused(reason)
                    }
                    guard descriptor >= 0 else { return .busy }
                    content = ContentSnapshot(descriptor: descriptor, length: size, node: node, token: token)
                }
            }
            var state = EntryState(
                parent: parentID, name: node.ino == .root ? [] : node.name.bytes, kind: node.kind, mode: node.mode,
                mtime: node.mtime.load(ordering: .relaxed), size: node.kind == .file ? size : 0, xattrs: node.xattrs,
                symlinkTarget: node.symlinkTarget)
            state.manifest = knownManifest
            let uncommitted = parentID.flatMap { parent in
                parent != .root && (tree.bases[parent]?.version ?? 0) == 0 ? parent : nil
            }
            return .put(
                UploadSnapshot(id: id, state: state, base: base, uncommittedParent: uncommitted, content: content))
        }
    }

    /// What taking a file for upload gave: the permit of the transition's `.upload` action, or
    /// why there is none (`.refuseUpload`, or a pair the machine calls impossible).
    private enum Taken {
        case permit(ContentLifecycle.UploadPermit)
        case refused(String)
    }

    /// Feeds `uploadTaken` to the file `node` (queued: the uploader took its item), or with
    /// `taking` false only asks the machine what that take would give.
    private func takeForUpload(_ node: Node, taking: Bool) -> Taken {
        let transition =
            taking
            ? node.apply(.uploadTaken, queued: true)
            : ContentLifecycle.transition(from: node.contentState(queued: true), on: .uploadTaken)
        for action in transition.actions {
            if case .upload(let permit) = action { return .permit(permit) }
        }
        let state = transition.state
        if state.residency == .lost { return .refused(CacheFileCheck.lostReason) }
        if state.modification == .writeFailed { return .refused(WriteFailures.reason(node.writeFailure)) }
        return .refused("its content cannot be vouched for (\(state.residency), \(state.modification))")
    }

    /// The upload of `item` ended without a commit (postponed, failed, busy, refused, parked,
    /// waiting for a merge command or for other changes, or its change dropped for the
    /// container's version): a file still taken is no longer in flight (`uploadRefused`; the
    /// path that ended it already handed the item back to the queue, the `retryUpload` the
    /// machine asks for). Called once per upload that ends, whatever ended it.
    func uploadReturned(_ item: OutboxItem) {
        live.transact { tree in
            guard let node = tree.node(withID: item.fileID), node.kind == .file, node.heldContent.isTakenForUpload
            else { return }
            node.apply(.uploadRefused, queued: outbox.isPending(item.fileID))
        }
    }

    /// True if the file was not written since `content` was taken (what was read is the file).
    func contentUnchanged(_ content: ContentSnapshot) -> Bool {
        content.node.contentUnchanged(since: content.token)
            && content.node.size.load(ordering: .relaxed) == content.length
    }

    /// The container committed `item` as `entry` (with `manifest` for files): records the new
    /// base and drops the outbox row unless the entry changed meanwhile, in one batch. A delete
    /// keeps its tombstone as the base until the follower has passed it in the feed
    /// (`LiveTree.feedReached`), so a feed batch read before the delete cannot re-create it.
    func uploadCommitted(_ item: OutboxItem, entry: RemoteEntry) {
        uploadsCommitted([(item, entry)])
    }

    /// `uploadCommitted` for each of `commits`, all in one transaction (the commits of a batch).
    func uploadsCommitted(_ commits: [(item: OutboxItem, entry: RemoteEntry)]) {
        guard !commits.isEmpty else { return }
        MountSeries.committed(readyAt: commits.map(\.item.readyAt), now: outbox.now)
        let clean = live.transact { tree -> Bool in
            var clean = false
            for (item, entry) in commits where record(item, committedAs: entry, in: &tree) { clean = true }
            return clean
        }
        if clean { residency.eviction.noteMaybeEvictable() }
    }

    /// Records one commit in `tree`; true if it left a live file clean.
    private func record(_ item: OutboxItem, committedAs entry: RemoteEntry, in tree: inout TreeTransaction) -> Bool {
        if entry.isDeleted && live.feedReached.load(ordering: .acquiring) >= entry.version {
            tree.removeBase(item.fileID)
        } else if entry.isDeleted {
            // The follower may be applying a batch it read before this delete: an older
            // version of the entry in it must not bring the entry back. The tombstone stays
            // the base (a version nothing older passes) until the follower reaches it in the
            // feed (`RemoteChanges.plan` drops it then).
            let tombstone = SyncBase(version: entry.version, manifest: [])
            tree.setBase(item.fileID, tombstone)
        } else {
            let base = SyncBase(version: entry.version, manifest: entry.state.manifest)
            tree.setBase(item.fileID, base, state: entry.state)
        }
        if !entry.isDeleted, let node = tree.node(withID: item.fileID), node.kind == .file, !node.isUnlinked {
            // Taken and unchanged since: clean once the item goes; changed since: still dirty.
            node.apply(.uploadCommitted, queued: outbox.isPending(item.fileID))
        }
        guard let done = outbox.succeeded(item) else { return false }
        tree.record(done)
        return !entry.isDeleted
    }

    /// The container committed an intermediate state of the entry (e.g. under a temporary
    /// name); the entry stays queued for its real state.
    func recordIntermediateCommit(_ entry: RemoteEntry) {
        live.transact { tree in
            let base = SyncBase(version: entry.version, manifest: entry.state.manifest)
            tree.setBase(entry.id, base, state: entry.state)
        }
    }

    /// Nothing had to be committed for `item` (deleted before it was ever uploaded).
    func uploadUnneeded(_ item: OutboxItem) {
        live.transact { tree in
            tree.removeBase(item.fileID)
            if let done = outbox.succeeded(item) { tree.record(done) }
        }
    }

    /// The upload of `item` failed; it waits its backoff (or, `waitsForContainer`, until the
    /// container answers again). The reason is kept for `status`.
    func uploadFailed(_ item: OutboxItem, reason: String?, waitsForContainer: Bool = false) {
        if let change = outbox.failed(item, reason: reason, waitsForContainer: waitsForContainer) {
            store.record([change])
        }
    }

    /// Makes the container's `entry` (live or a tombstone) the base of `id`, so the next commit
    /// replaces that version (the local change goes on top of it, or re-creates a remotely
    /// deleted entry); nil: the container has no such entry, the next commit creates it.
    func rebase(_ id: FileID, onto entry: RemoteEntry?) {
        live.transact { tree in
            guard let entry else {
                let base = SyncBase(version: 0, manifest: tree.bases[id]?.manifest ?? [])
                tree.setBase(id, base)
                return
            }
            // A placeholder's content *is* its base manifest (it has no bytes of its own): it keeps
            // it, so the next commit still describes the content it stands for.
            let keepsContent = tree.node(withID: id).map { $0.isPlaceholder && !$0.isUnlinked } ?? false
            let manifest = keepsContent ? (tree.bases[id]?.manifest ?? entry.state.manifest) : entry.state.manifest
            let base = SyncBase(version: entry.version, manifest: manifest)
            tree.setBase(id, base, state: entry.state)
        }
    }

    /// The entry state of `id`'s base version, if recorded (see `MetadataStore.baseState`).
    func baseState(of id: FileID) throws -> EntryState? {
        try store.baseState(of: id)
    }

    /// This mount's queued deletes of entries the container still holds, by the folder it holds
    /// each in (its sync base's parent, what the container last had): what a refused delete of a
    /// folder waits for. One read of the state database for all of the queue's deletes; used
    /// only when a folder's delete is refused.
    func ownDeletesQueuedByFolder() throws -> [FileID: [FileID]] {
        let deletes = live.transact { tree in
            outbox.items.filter { item in
                guard (tree.bases[item.fileID]?.version ?? 0) > 0 else { return false }
                return tree.node(withID: item.fileID).map(\.isUnlinked) ?? true
            }
        }
        let states = try store.baseStates(of: deletes.map(\.fileID))
        var byFolder: [FileID: [FileID]] = [:]
        for item in deletes {
            guard let parent = states[item.fileID]?.parent, parent != item.fileID else { continue }
            byFolder[parent, default: []].append(item.fileID)
        }
        return byFolder
    }

    /// Queues `id` for upload as if it had changed locally (a parent that must be re-created).
    func requeue(_ id: FileID) {
        live.transact { tree in tree.record(outbox.changed(id)) }
    }

    /// The base the local copy of `id` reflects.
    func syncBase(of id: FileID) -> SyncBase? {
        live.transact { $0.bases[id] }
    }

    /// Gives the local entry `id` a free conflict name in its directory, as a local change (its
    /// name was taken in the container by the entry `holder`). Returns the new name, or nil if
    /// nothing was renamed (gone, or changed since `item` was taken).
    @discardableResult
    func renameAside(_ id: FileID, holder: FileID?, unlessChangedSince item: OutboxItem? = nil) -> FileName? {
        live.transact { tree -> FileName? in
            // Renamed (or otherwise changed) here since the upload was taken: that newer change
            // goes to the container instead, and meets the name question anew.
            if let item, !outbox.isUnchanged(since: item) { return nil }
            guard let node = tree.node(withID: id), !node.isUnlinked, let parentIno = node.parent,
                let parent = tree.nodes[parentIno]
            else { return nil }
            let excludedHolder = holder.map { tree.excludedFolders.contains($0) } ?? false
            return tree.moveToConflictName(
                node, in: parent, of: holder, host: deviceName, origin: .local,
                reason: excludedHolder ? TreeTransaction.selectiveSyncReason : TreeTransaction.nameTakenReason)
        }
    }
}

extension UploadRecords {
    /// Whether `id` is live here under its parking name with no change of it queued.
    func isParkedHere(_ id: FileID) -> Bool {
        live.transact { tree in parkedHere(id, in: tree) != nil }
    }

    /// Gives `id`, left under its parking name (`ParkingName`) with no change of it queued, its
    /// real `name` back in the same folder (a conflict name of it if another entry holds it) and
    /// queues the rename. Nil, and nothing done, if the entry is gone, has another name by now, or
    /// has a change queued (its own upload gives it its name).
    func unpark(_ id: FileID, to name: FileName) -> FileName? {
        live.transact { tree -> FileName? in
            guard let (node, parent) = parkedHere(id, in: tree) else { return nil }
            return tree.rename(node, in: parent, preferring: name, host: deviceName)
        }
    }

    /// The node of `id` and its folder, if it is live under its parking name with nothing queued.
    private func parkedHere(_ id: FileID, in tree: TreeTransaction) -> (Node, Node)? {
        guard !outbox.isPending(id), let node = tree.node(withID: id), !node.isUnlinked,
            node.name.bytes == ParkingName.of(id), let parentIno = node.parent, let parent = tree.nodes[parentIno]
        else { return nil }
        return (node, parent)
    }
}

extension UploadRecords {
    /// Bytes of content waiting in the queued files (for progress lines).
    func pendingBytes(_ ids: [FileID]) -> Int64 {
        live.transact { tree in
            ids.reduce(0) { total, id in
                guard let node = tree.node(withID: id), node.kind == .file, !node.isUnlinked else { return total }
                return total + node.size.load(ordering: .relaxed)
            }
        }
    }
}
