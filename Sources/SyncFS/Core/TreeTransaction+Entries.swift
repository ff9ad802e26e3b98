import Glibc
import SyncBackend

/// Entries made and removed by the kernel's operations (`mkdir`, `mknod`, `create`, `symlink`,
/// `unlink`, `rmdir`, a rename's replaced target), in the caller's transaction: recorded, queued
/// for upload and published as change events.
extension TreeTransaction {
    /// Makes a new node under `parent` (the caller has validated the name).
    /// New entries belong to the caller; in a setgid directory they take its group (and new
    /// directories inherit the setgid bit), as on local filesystems.
    mutating func makeNode(
        _ kind: NodeKind, in directory: Node, name: FileName, mode: UInt32, caller: Caller,
        symlinkTarget: [UInt8]? = nil, fileID: FileID = .random()
    ) throws(FSError) -> Node {
        if child(of: directory, named: name) != nil { throw .exists }
        let now = Clock.nowNanoseconds()
        let setgidParent = directory.mode & UInt32(S_ISGID) != 0
        var permissions = mode & 0o7777
        if kind == .directory && setgidParent { permissions |= UInt32(S_ISGID) }
        let record = EntryRecord(
            ino: allocateIno(), fileID: fileID, parent: directory.ino, name: name, kind: kind,
            mode: permissions, uid: caller.uid, gid: setgidParent ? directory.gid : caller.gid, size: 0,
            atime: now, mtime: now, ctime: now, symlinkTarget: symlinkTarget)
        let node = Node(record: record, xattrs: [:])
        bases.minted(fileID)
        node.cacheEntryDurable.store(kind != .file, ordering: .relaxed)
        attach(node, to: directory, as: name)
        self.record([.upsert(record), outbox.changed(fileID), .fact(.nextIno, nextIno)])
        touchDirectory(directory, now: now)
        noteChange(.created, node, origin: .local)
        return node
    }

    /// Removes `node` from the tree and its entry from the store; the node lives on while the
    /// kernel or a handle refers to it. Publishes `deleted` unless `publishing` is false.
    mutating func unlinkNode(_ node: Node, from directory: Node, publishing: Bool = true) throws(FSError) {
        let now = Clock.nowNanoseconds()
        if publishing { noteChange(.deleted, node, origin: .local) }
        detach(node)
        node.isUnlinked = true
        node.ctime = now
        record([.delete(node.ino), outbox.changed(node.fileID)])
        touchDirectory(directory, now: now)
        releaseIfUnused(node.ino)
    }
}
