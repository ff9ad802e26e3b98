import Glibc
import Logging
import SyncBackend
import Synchronization

/// The container's changes applied to the tree (the follower's side): each remote entry is
/// planned against the local state (`planRemote`), then applied — created, updated, moved or
/// deleted, with its new sync base, in one transaction, without queueing an upload — and, with
/// the inotify echo on, made visible to inotify watchers (`RemoteEcho`, which calls back through
/// `RemoteApplying`).
final class RemoteChanges: Sendable, HoldsTheTree, RemoteApplying {
    let parts: FolderParts
    let residency: ContentResidency
    /// The follower's side of the inotify echo.
    let echo: RemoteEcho
    /// `mount --allow-remote-setuid` (see `appliedMode`).
    let remoteSetuid: SharedFlag

    init(fileSystem: SyncFileSystem) {
        parts = fileSystem.parts
        residency = fileSystem.residency
        echo = RemoteEcho(channel: fileSystem.echo.channel, live: fileSystem.live, logger: fileSystem.logger)
        remoteSetuid = fileSystem.remoteSetuid
    }
}

extension RemoteChanges {
    /// The follower begins to apply the feed entry of container version `version` (see
    /// `LiveTree.feedReached`). Called by the follower thread only, in feed order.
    func noteFeedReached(_ version: EntryVersion) { advance(live.feedReached, to: version) }

    /// The follower is done with the feed entry of container version `version` (see
    /// `LiveTree.feedHandled`). Called by the follower thread only, in feed order.
    func noteFeedHandled(_ version: EntryVersion) { live.feedHandled.advance(to: version) }

    /// Moves a marker only the follower thread writes forward to `version`.
    private func advance(_ marker: borrowing Atomic<UInt64>, to version: EntryVersion) {
        if marker.load(ordering: .relaxed) < version { marker.store(version, ordering: .releasing) }
    }

    /// Decides what to do with a remote entry. `force` ignores local changes
    /// (the local side gave way after a conflict).
    func planRemote(_ entry: RemoteEntry, force: Bool = false) -> RemotePlan {
        live.transact { tree in plan(entry, force: force, tree: &tree) }
    }

    func plan(_ entry: RemoteEntry, force: Bool, tree: inout TreeTransaction) -> RemotePlan {
        // Checked where the entry entered (the engine's container) and again here, where it is
        // used: every path that applies a remote entry plans it first.
        if let problem = RemoteEntryValidation.problem(with: entry) { return .refused(problem) }
        let base = tree.bases[entry.id]
        let node = tree.node(withID: entry.id)
        if !force, let base, base.version >= entry.version {
            // This mount's own delete, reached in the feed: the tombstone it kept as the base
            // (`UploadRecords.uploadCommitted`) has done its work.
            if entry.isDeleted && entry.version == base.version && node.map(\.isUnlinked) != false {
                tree.removeBase(entry.id)
            }
            return .skip
        }
        if let node, !node.isUnlinked, !entry.isDeleted, node.kind != entry.state.kind {
            return .refused("it would turn the \(node.kind) \(entry.id) into a \(entry.state.kind)")
        }
        if !force && outbox.isPending(entry.id) { return .localChangesPending }
        if let node, node.openWriters > 0 { return .later }
        if entry.isDeleted { return .apply(needsContent: false) }
        if entry.id == .root { return .apply(needsContent: false) }
        guard let parentID = entry.state.parent else { return .skip }
        guard let parent = tree.node(withID: parentID), !parent.isUnlinked, parent.kind == .directory else {
            // A parent deleted here with its delete still queued: the upload of that delete decides —
            // unless this change is forced (a local change gave way to it): then the folder
            // comes back too (a directory delete loses against what the other side put in it).
            if outbox.isPending(parentID) && !force { return .later }
            return .needsParent(parentID)
        }
        if let node, node.kind == .directory, !node.isUnlinked, tree.isSameOrBelow(parent, node) { return .later }
        // New files arrive as placeholders; a file whose content is here stays here (its new
        // content is downloaded now).
        let needsContent =
            entry.state.kind == .file && node.map { !$0.isUnlinked && !$0.isPlaceholder } == true
            && base?.manifest != entry.state.manifest
        return .apply(needsContent: needsContent)
    }

    /// Applies a remote entry: creates, updates, moves or removes the local entry and records
    /// the new base, in one batch, without queueing an upload; then drops the kernel's stale
    /// caches. `contentFile` (files whose content changed) is a complete, synced temporary file
    /// that replaces the cache file atomically: a reader that has the file open keeps reading the
    /// old content. Re-plans in its transaction and returns the plan if it is no longer `apply`
    /// (the caller then deletes `contentFile`).
    ///
    /// With the inotify echo on (`EchoChannel.start`), creates, deletes and moves are applied
    /// through the mount point and content and attribute changes are touched afterwards, so
    /// programs watching with inotify see them (see `InotifyEcho`).
    ///
    /// With `giving` (the local change that gives way, forced), nothing happens if that entry
    /// changed locally since the item was taken (`.localChangesPending`: its next upload decides);
    /// such a change is applied directly, without the echo.
    func applyRemote(
        _ entry: RemoteEntry, contentFile: String?, force: Bool = false, giving item: OutboxItem? = nil
    ) -> RemotePlan {
        if item == nil, let echoed = echo.apply(entry, contentFile: contentFile, force: force, by: self) {
            return echoed
        }
        var application = RemoteApplication()
        return live.transact { tree -> RemotePlan in
            if force, let item, item.fileID == entry.id, !outbox.isUnchanged(since: item) {
                return .localChangesPending
            }
            return applyRemoteLocked(entry, contentFile: contentFile, force: force, tree: &tree, into: &application)
        }
    }

    /// `applyRemote` inside a transaction: re-plans, applies, records, publishes the change events
    /// and collects the kernel invalidations in `tree`; the echo's touch goes to `application`.
    func applyRemoteLocked(
        _ entry: RemoteEntry, contentFile: String?, force: Bool, tree: inout TreeTransaction,
        into application: inout RemoteApplication
    ) -> RemotePlan {
        let decision = plan(entry, force: force, tree: &tree)
        guard case .apply(let needsContent) = decision else { return decision }
        if needsContent && contentFile == nil { return decision }
        if force { tree.record(outbox.remove(entry.id)) }
        if entry.isDeleted {
            guard applyDeletion(entry, tree: &tree) else { return .later }
        } else if let node = tree.node(withID: entry.id), !node.isUnlinked {
            guard
                update(
                    node, to: entry, contentFile: needsContent ? contentFile : nil, tree: &tree,
                    application: &application)
            else { return .later }
        } else {
            guard create(entry, contentFile: contentFile, tree: &tree, application: &application) else { return .later }
        }
        return decision
    }

    func applyDeletion(_ entry: RemoteEntry, tree: inout TreeTransaction) -> Bool {
        guard let node = tree.node(withID: entry.id), !node.isUnlinked, let parentIno = node.parent,
            let parent = tree.nodes[parentIno]
        else {
            tree.removeBase(entry.id)
            return true
        }
        if node.kind == .directory && !node.children.isEmpty {
            // Local entries the container does not know live in it: keep the directory and
            // re-create it in the container (a put on the tombstone).
            let base = SyncBase(version: entry.version, manifest: [])
            tree.setBase(entry.id, base, state: entry.state)
            tree.record(outbox.changed(entry.id))
            return true
        }
        tree.removeBase(entry.id)
        if !tree.isExcluded(node) { tree.invalidate(.deleted(parent: parentIno, child: node.ino, name: node.name)) }
        tree.noteChange(.deleted, node, origin: .remote)
        tree.endExclusionOfDeleted(node)
        let now = Clock.nowNanoseconds()
        tree.detach(node)
        node.isUnlinked = true
        node.removedRemotely = true
        node.ctime = now
        tree.record(.delete(node.ino))
        entriesChangedRemotely(parent, now: now, tree: &tree)
        tree.releaseIfUnused(node.ino)
        return true
    }

    /// Puts `node` at `name` in `parent`, moving a different local entry there aside.
    private func place(
        _ node: Node, in parent: Node, as name: FileName, tree: inout TreeTransaction
    ) {
        if tree.isExcludedFolder(node) {
            tree.moveExcludedFolder(node, to: parent, as: name)
            return
        }
        if let occupant = tree.child(of: parent, named: name), occupant.ino != node.ino {
            // Keep both: the local entry takes a conflicted-copy name and is uploaded under it.
            _ = tree.moveToConflictName(occupant, in: parent, of: node.fileID, host: deviceName, origin: .remote)
        }
        if let oldParentIno = node.parent, let oldParent = tree.nodes[oldParentIno] {
            tree.invalidate(.entry(parent: oldParentIno, name: node.name))
            tree.detach(node)
            entriesChangedRemotely(oldParent, now: Clock.nowNanoseconds(), tree: &tree)
        }
        tree.attach(node, to: parent, as: name)
        tree.invalidate(.entry(parent: parent.ino, name: name))
        entriesChangedRemotely(parent, now: Clock.nowNanoseconds(), tree: &tree)
        if tree.isExcluded(parent) { freeContentOutOfSight(node, tree: &tree) }
    }

    /// An entry the container moved into a folder excluded here: its local content goes as the
    /// folder's did at `exclude` (what is open or not yet uploaded stays until it can go).
    private func freeContentOutOfSight(_ node: Node, tree: inout TreeTransaction) {
        for kept in residency.eviction.evictForExclusion(below: node, tree: &tree) {
            logger.info("\(kept.path) moved into a folder excluded here keeps its content: it \(kept.reason)")
        }
    }

    /// A remote change added, removed or moved an entry of `directory`. Its mtime stays what the
    /// container holds (a directory's mtime syncs only when set explicitly, and the one it gets
    /// from changes to its entries is local to the mount that made them: doc/SEMANTICS.md, "What
    /// syncs"), so attaching a tree or following changes never turns every directory's time into
    /// the time they arrived. Its ctime, which is local, moves, so programs that compare a
    /// directory's stat to notice new entries (git's untracked cache, file managers) still see
    /// the change. Nothing is queued: this is not a local change.
    private func entriesChangedRemotely(_ directory: Node, now: Int64, tree: inout TreeTransaction) {
        directory.ctime = now
        tree.recordChange(directory)
        tree.invalidate(.attributes(directory.ino))
    }

    func update(
        _ existing: Node, to entry: RemoteEntry, contentFile: String?, tree: inout TreeTransaction,
        application: inout RemoteApplication
    ) -> Bool {
        let state = entry.state
        guard existing.kind == state.kind else { return false }
        var node = existing
        var contentFile = contentFile
        let oldPath = tree.pathIfObserved(existing)
        let wasOutOfSight = tree.isExcluded(existing)
        let placeholderChanged = existing.isPlaceholder && tree.bases[entry.id]?.manifest != state.manifest
        let contentChanged = contentFile != nil || placeholderChanged
        let metadataChanged =
            existing.mode != appliedMode(state.mode) || existing.mtime.load(ordering: .relaxed) != state.mtime
            || existing.xattrs != state.xattrs || (state.symlinkTarget.map { $0 != existing.symlinkTarget } ?? false)
        let timesOrContentChanged =
            contentFile != nil || placeholderChanged || existing.mtime.load(ordering: .relaxed) != state.mtime
        prepareForContent(
            of: existing, size: state.size, hasContentFile: contentFile != nil, placeholderChanged: placeholderChanged,
            tree: &tree)
        if existing.kind == .file && timesOrContentChanged
            && (existing.openCount > 0 || tree.inodes.isReferenced(existing.ino))
        {
            // The kernel knows this inode: under the writeback cache it keeps its own size and
            // mtime for it and never takes new ones from the daemon, and programs that have it
            // open must keep reading the old content. So the name now leads to a new inode with
            // the new content and times (as after a local replace-by-rename); the old inode
            // keeps the old content for its open handles and goes when the kernel forgets it.
            guard let fresh = replaceInode(existing, content: contentFile, tree: &tree) else {
                return false
            }
            node = fresh
            contentFile = nil
            tree.invalidate(
                .deleted(parent: fresh.parent ?? .root, child: existing.ino, name: fresh.name))
        }
        // The content before anything else: when it cannot be installed, the node is untouched.
        if let contentFile {
            node.beginContentChange()
            let installed = installContent(contentFile, as: node.fileID, name: node.name)
            if installed { node.size.store(state.size, ordering: .relaxed) }
            node.endContentChange()
            guard installed else { return false }
        }
        let moved = move(node, to: state, tree: &tree)
        node.mode = appliedMode(state.mode)
        node.mtime.store(state.mtime, ordering: .relaxed)
        node.ctime = Clock.nowNanoseconds()
        node.symlinkTarget = state.symlinkTarget ?? node.symlinkTarget
        applyXattrs(state.xattrs, to: node, tree: &tree)
        tree.invalidate(contentFile != nil ? .content(node.ino) : .attributes(node.ino))
        if node !== existing || node.isPlaceholder { node.size.store(state.size, ordering: .relaxed) }
        record(node, at: entry, tree: &tree)
        if moved { noteMove(of: node, from: oldPath, wasOutOfSight: wasOutOfSight, tree: &tree) }
        if contentChanged || metadataChanged {
            tree.noteChange(.modified, node, origin: .remote)
            if application.wantsTouch {
                application.touch = EchoTouch(after: node, contentChanged: contentChanged, in: tree)
            }
        }
        return true
    }

    /// The event of a remote move: `renamed`, or, across the edge of a folder excluded here,
    /// `deleted` at the old path (moved out of sight) or `created` (moved into sight).
    private func noteMove(of node: Node, from oldPath: String?, wasOutOfSight: Bool, tree: inout TreeTransaction) {
        let isOutOfSight = tree.isExcluded(node)
        // Across the edge, the synced ignore files below come into sight or leave it.
        if wasOutOfSight != isOutOfSight && node.kind == .directory { tree.rulesWatch.touched() }
        switch (wasOutOfSight, isOutOfSight) {
        case (false, true):
            if let oldPath { tree.noteChange(.deleted, node, origin: .remote, path: oldPath) }
        case (true, false): tree.noteChange(.created, node, origin: .remote)
        default: tree.noteChange(.renamed, node, origin: .remote, oldPath: oldPath)
        }
    }

    /// Before new content replaces `existing`'s: content adopted over a local change (a merge)
    /// must not leave a record claiming more bytes than the cache file about to hold it
    /// (`TreeTransaction.commitSizeAhead`); a placeholder nobody reads drops the part of its old
    /// content already downloaded.
    private func prepareForContent(
        of existing: Node, size: Int64, hasContentFile: Bool, placeholderChanged: Bool, tree: inout TreeTransaction
    ) {
        if hasContentFile && !existing.isPlaceholder && outbox.isPending(existing.fileID)
            && size < existing.size.load(ordering: .relaxed)
        {
            do {
                try tree.commitSizeAhead(of: existing, size: size)
            } catch {
                logger.warning("could not record the new size of \(existing.name) before replacing it: \(error)")
            }
        }
        if placeholderChanged && existing.openCount == 0 && !tree.inodes.isReferenced(existing.ino) {
            residency.hydrations.cancelHydration(of: existing, in: &tree)
            cache.remove(existing.fileID)
        }
    }

    /// Moves `node` to the parent and name of `state` if it is elsewhere; true if it moved.
    private func move(_ node: Node, to state: EntryState, tree: inout TreeTransaction) -> Bool {
        guard node.ino != .root, let parentID = state.parent, let parent = tree.node(withID: parentID) else {
            return false
        }
        let name = FileName(bytes: state.name)
        guard node.parent != parent.ino || node.name != name else { return false }
        place(node, in: parent, as: name, tree: &tree)
        return true
    }

    /// Records `node` as applied at `entry`'s version: its record and its new sync base.
    private func record(_ node: Node, at entry: RemoteEntry, tree: inout TreeTransaction) {
        tree.record(.upsert(node.record))
        let base = SyncBase(version: entry.version, manifest: entry.state.manifest)
        tree.setBase(entry.id, base, state: entry.state)
    }

    /// Gives `old`'s place and identity to a new node (new inode number) whose cache file is
    /// `content` (or the current one); `old` is unlinked, keeps its open handles, and takes a throwaway identity with
    /// no cache file, so releasing it removes nothing.
    private func replaceInode(
        _ old: Node, content: String?, tree: inout TreeTransaction
    ) -> Node? {
        guard let parentIno = old.parent, let parent = tree.nodes[parentIno] else { return nil }
        let id = old.fileID
        if let content { guard installContent(content, as: id, name: old.name) else { return nil } }
        let retiring = old.isPlaceholder
        if retiring { old.retiredManifest = old.retiredManifest ?? tree.bases[id]?.manifest }
        let name = old.name
        var record = old.record
        record.ino = tree.allocateIno()
        let fresh = Node(record: record, xattrs: old.xattrs)
        tree.detach(old)
        old.isUnlinked = true
        old.removedRemotely = true
        old.fileID = FileID.random()
        tree.byFileID[old.fileID] = old.ino
        // A placeholder's partial download goes with the old node (its handles and download keep
        // using it); the new node starts without one.
        if retiring && !cache.move(id, to: old.fileID) { cache.remove(id) }
        tree.record(.delete(old.ino))
        tree.attach(fresh, to: parent, as: name)
        tree.record(.upsert(fresh.record))
        tree.record(.fact(.nextIno, tree.nextIno))
        for (key, value) in fresh.xattrs { tree.record(.setXattr(fresh.ino, name: key, value: value)) }
        tree.releaseIfUnused(old.ino)
        return fresh
    }

    /// Moves a downloaded content file into place as `id`'s cache file. Called before the tree
    /// changes: a failure (a full disk, a lost temporary file) is logged and returns false, and
    /// the change is applied later (`RemotePlan.later`) with the tree as it was.
    private func installContent(_ contentFile: String, as id: FileID, name: FileName) -> Bool {
        do throws(FSError) {
            try cache.install(contentFile, as: id)
            return true
        } catch {
            logger.warning("cannot install the downloaded content of \(name) (\(id)); applying it later: \(error)")
            return false
        }
    }

    private func create(
        _ entry: RemoteEntry, contentFile: String?, tree: inout TreeTransaction,
        application: inout RemoteApplication
    ) -> Bool {
        let state = entry.state
        guard let parentID = state.parent, let parent = tree.node(withID: parentID),
            let owner = tree.nodes[.root]
        else { return false }
        if let stale = tree.node(withID: entry.id), stale.isUnlinked {
            // Deleted locally while still open, and the delete never reached the container: the
            // remote version comes back as a new inode; the old one lives on for its handles.
            tree.byFileID[entry.id] = nil
        }
        var isPlaceholder = false
        if state.kind == .file {
            if let contentFile {
                guard installContent(contentFile, as: entry.id, name: FileName(bytes: state.name)) else {
                    return false
                }
            } else {
                // A placeholder: names and attributes only; the content comes when read. A
                // left-over partial download of the same ID is not trusted.
                cache.remove(entry.id)
                isPlaceholder = true
            }
        }
        let now = Clock.nowNanoseconds()
        let record = EntryRecord(
            ino: tree.allocateIno(), fileID: entry.id, parent: nil, name: FileName(bytes: state.name),
            kind: state.kind, mode: appliedMode(state.mode), uid: owner.uid, gid: owner.gid, size: state.size,
            atime: now,
            mtime: state.mtime, ctime: now, symlinkTarget: state.symlinkTarget, isPlaceholder: isPlaceholder)
        let node = Node(record: record, xattrs: [:])
        place(
            node, in: parent, as: record.name, tree: &tree)
        tree.record(.upsert(node.record))
        tree.record(.fact(.nextIno, tree.nextIno))
        applyXattrs(state.xattrs, to: node, tree: &tree)
        let base = SyncBase(version: entry.version, manifest: state.manifest)
        tree.setBase(entry.id, base, state: state)
        tree.noteChange(.created, node, origin: .remote)
        tree.noteArrivedConflictCopy(node, entry: entry)
        // A new file is echoed as written and closed too, as a local copy would be seen.
        if application.wantsTouch && node.kind == .file {
            application.touch = EchoTouch(after: node, contentChanged: true, in: tree)
        }
        return true
    }

    /// The mode a remote entry gets here: the container's, without setuid and setgid unless the
    /// mount allows them (`allowRemoteSetuid`), so a container cannot hand out privileges.
    func appliedMode(_ remote: UInt32) -> UInt32 {
        remoteSetuid.isSet ? remote : remote & ~UInt32(S_ISUID | S_ISGID)
    }

    private func applyXattrs(
        _ wanted: [String: [UInt8]], to node: Node, tree: inout TreeTransaction
    ) {
        for name in node.xattrs.keys where wanted[name] == nil {
            tree.record(.removeXattr(node.ino, name: name))
        }
        for (name, value) in wanted where node.xattrs[name] != value {
            tree.record(.setXattr(node.ino, name: name, value: value))
        }
        node.xattrs = wanted
        tree.noteConflictAttribute(of: node)
    }

    /// A fresh path for downloading content next to the cache (same filesystem, so the final
    /// rename is atomic).
    func temporaryContentPath() -> String {
        cache.temporaryPath()
    }

    /// The cache file's path of a clean local file whose content is `base` (for reusing chunks
    /// it already holds), or nil.
    func reusableContentPath(_ id: FileID) -> String? {
        live.transact { tree in
            guard let node = tree.node(withID: id), node.kind == .file, node.openWriters == 0,
                !outbox.isPending(id), !node.isPlaceholder
            else { return nil }
            return cache.path(for: id)
        }
    }
}

extension RemoteChanges {
    /// Stores the follower's position and the changes it must retry, behind what it applied.
    func recordFollowerProgress(cursor: String, deferred: Set<FileID>) {
        store.record([
            .fact(.feedCursor, FeedCursor(token: cursor)),
            .fact(.deferredIDs, deferred),
        ])
    }
}
