import SyncBackend

/// What every change of the tree does besides changing it: records for the store, the outbox
/// row of a change that syncs, events, attributes for the kernel. Methods of the transaction, so
/// they run under the namespace lock by construction.
extension TreeTransaction {
    /// An entry of this name changing (anywhere) has the rules read again (`RulesWatch`).
    static let rulesFileName = FileName(".syncfs-rules")
    /// A synced ignore file's name (`IgnoreRules.syncedFileName`): its change is read again too.
    static let ignoreFileName = FileName(".syncfs-ignore")

    /// The last writer of `node` closed it: a rules or ignore file is read again (one compare).
    func noteRulesFileClosed(_ node: Node) {
        if node.name == Self.rulesFileName || node.name == Self.ignoreFileName { rulesWatch.touched() }
    }

    // MARK: Records

    /// Records the node's current record and queues it for upload, in one batch. For local
    /// changes that sync (not for remote changes being applied).
    mutating func recordLocalChange(_ node: Node) {
        // The machine's `recorded` (files): the queueing it asks for is the outbox row below.
        if node.kind == .file { node.apply(.recorded, queued: true) } else { node.recordHandedToStore() }
        record([.upsert(node.record), outbox.changed(node.fileID)])
    }

    /// Records the node's current record (a change that does not sync).
    mutating func recordChange(_ node: Node) {
        node.recordHandedToStore()
        record(.upsert(node.record))
    }

    /// Stamps a directory's mtime and ctime after its children changed.
    mutating func touchDirectory(_ directory: Node, now: Int64) {
        directory.mtime.store(now, ordering: .relaxed)
        directory.ctime = now
        recordChange(directory)
    }

    /// Drops `ino` if it is unlinked and unreferenced; its cache file goes once the removal of
    /// its entry is committed.
    mutating func releaseIfUnused(_ ino: InodeNumber) {
        guard let node = dropIfUnused(ino), node.kind == .file else { return }
        let cache = self.cache
        let id = node.fileID
        afterCommit { cache.remove(id) }
    }

    // MARK: Attributes

    /// Attributes of `node`.
    func attributes(of node: Node) -> FileAttributes {
        let size: Int64
        var blocks: Int64 = 0
        switch node.kind {
        case .file:
            size = node.size.load(ordering: .relaxed)
            blocks = allocatedBlocks(of: node)
            // A placeholder shows at least one block: `tar --sparse` takes a file with none for
            // all holes and would not read it.
            if size > 0 && blocks == 0 && node.isPlaceholder { blocks = 1 }
        case .directory:
            size = 4096
            blocks = 8
        case .symlink:
            size = Int64(node.symlinkTarget?.count ?? 0)
        }
        let nlink: UInt32
        switch node.kind {
        case .directory: nlink = node.isUnlinked ? 0 : UInt32(2 + node.subdirectoryCount)
        case .file, .symlink: nlink = node.isUnlinked ? 0 : 1
        }
        return FileAttributes(
            ino: node.ino, kind: node.kind, mode: node.mode, nlink: nlink, uid: node.uid, gid: node.gid, size: size,
            blocks: blocks, atime: node.atime, mtime: node.mtime.load(ordering: .relaxed), ctime: node.ctime)
    }

    /// The reply for an inode just handed to the kernel; counts the reference.
    mutating func entryReply(for node: Node) -> EntryReply {
        inodes.remember(node.ino)
        return EntryReply(attributes: attributes(of: node), generation: inodes.generation)
    }

    // MARK: Events

    /// Change events (`ChangeEvents`): what the core publishes, and when.
    ///
    /// Local changes: `created` (create, mknod, mkdir, symlink), `deleted` (unlink, rmdir; a file
    /// replaced by a rename), `renamed` (with `oldPath`; an exchange is two), `modified`: content once
    /// per burst (when the last writer closes, on `fsync`, on `truncate` by path) and attribute
    /// changes (mode, owner, times, `user.` extended attributes). A new file written and closed is
    /// `created` then `modified`, as inotify's IN_CREATE then IN_CLOSE_WRITE.
    /// Remote changes (the follower): `created`, `modified` (content or metadata), `renamed`,
    /// `deleted`, and `conflict` for a local entry moved aside to a conflicted-copy name.
    /// Downloads: `downloaded` when a file's content is all here (origin absent).
    ///
    /// Publishes a change of `node` at its current path (or `path`); one atomic load when nobody
    /// observes.
    mutating func noteChange(
        _ kind: ChangeEvent.Kind, _ node: Node, origin: ChangeEvent.Origin?, oldPath: String? = nil,
        path: String? = nil
    ) {
        if node.name == Self.rulesFileName || node.name == Self.ignoreFileName { rulesWatch.touched() }
        if kind == .renamed && node.kind == .directory {
            rulesWatch.folderMoved()
            // The entries below have new paths: the changes held as ignored are decided again.
            outbox.releaseHeld()
        }
        // Entries of a folder excluded from this device are not seen here (unless the caller
        // names the path: a remote move out of sight is told as a delete at the old path).
        // A first attach's entries are counted in `scan-end` instead (`ChangeEvents`).
        let entryChange = kind == .created || kind == .modified || kind == .deleted || kind == .renamed
        let observed =
            origin == .remote && entryChange ? changeEvents.isObservedEntryByEntry : changeEvents.isObserved
        guard observed, path != nil || !isExcluded(node) else { return }
        publish(
            ChangeEvent(
                kind: kind, path: path ?? displayPath(of: node), oldPath: oldPath, origin: origin,
                fileID: node.fileID, type: .init(node.kind)))
    }

    /// The node's path if anybody observes changes (for `oldPath` and deletions), else nil.
    func pathIfObserved(_ node: Node) -> String? {
        changeEvents.isObserved ? displayPath(of: node) : nil
    }

    /// Reports the content change of a burst that ends now (last writer closed, or `fsync`).
    mutating func noteContentChangeEnded(_ node: Node) {
        guard node.changedSinceEvent.exchange(false, ordering: .relaxed), !node.isUnlinked else { return }
        noteChange(.modified, node, origin: .local)
    }

    /// The path of `node` below the mount point, for messages.
    func displayPath(of node: Node) -> String {
        var parts: [String] = []
        var current: Node? = node
        while let this = current, this.ino != .root {
            parts.append(this.name.description)
            current = this.parent.flatMap { nodes[$0] }
            if parts.count > 4096 { break }
        }
        return parts.reversed().joined(separator: "/")
    }
}
