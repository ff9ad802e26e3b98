import Glibc
import SyncBackend

extension SyncFileSystem {
    /// Makes a new node under `parent` (the caller has validated the name).
    /// New entries belong to the caller; in a setgid directory they take its group (and new
    /// directories inherit the setgid bit), as on local filesystems.
    func makeNode(
        _ kind: NodeKind, in directory: Node, name: FileName, mode: UInt32, caller: Caller,
        symlinkTarget: [UInt8]? = nil, fileID: FileID = .random(), tree: inout TreeTransaction
    ) throws(FSError) -> Node {
        if tree.child(of: directory, named: name) != nil { throw .exists }
        let now = Clock.nowNanoseconds()
        let setgidParent = directory.mode & UInt32(S_ISGID) != 0
        var permissions = mode & 0o7777
        if kind == .directory && setgidParent { permissions |= UInt32(S_ISGID) }
        let record = EntryRecord(
            ino: tree.allocateIno(), fileID: fileID, parent: directory.ino, name: name, kind: kind,
            mode: permissions, uid: caller.uid, gid: setgidParent ? directory.gid : caller.gid, size: 0,
            atime: now, mtime: now, ctime: now, symlinkTarget: symlinkTarget)
        let node = Node(record: record, xattrs: [:])
        node.cacheEntryDurable.store(kind != .file, ordering: .relaxed)
        tree.attach(node, to: directory, as: name)
        tree.record([.upsert(record), outbox.changed(fileID), .fact(.nextIno, tree.nextIno)])
        tree.touchDirectory(directory, now: now)
        tree.noteChange(.created, node, origin: .local)
        return node
    }

    func mkdir(parent: InodeNumber, name: FileName, mode: UInt32, caller: Caller) throws(FSError)
        -> EntryReply
    {
        if let echoed = echo.request(from: caller) {
            return try echoed.create(parent: parent, name: name, kind: .directory)
        }
        let name = try name.validated()
        return try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            let node = try makeNode(.directory, in: directory, name: name, mode: mode, caller: caller, tree: &tree)
            return tree.entryReply(for: node)
        }
    }

    func rmdir(parent: InodeNumber, name: FileName, caller: Caller = .thisProcess) throws(FSError) {
        if let echoed = echo.request(from: caller) { return try echoed.remove(parent: parent, name: name) }
        try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            guard let node = tree.child(of: directory, named: name) else { throw .notFound }
            guard node.kind == .directory else { throw .notDirectory }
            guard node.children.isEmpty else { throw .notEmpty }
            try unlinkNode(node, from: directory, in: &tree)
        }
    }

    /// Removes `node` from the tree and its entry from the store; the node lives on while the
    /// kernel or a handle refers to it. Publishes `deleted` unless `publishing` is false.
    func unlinkNode(_ node: Node, from directory: Node, in tree: inout TreeTransaction, publishing: Bool = true)
        throws(FSError)
    {
        let now = Clock.nowNanoseconds()
        if publishing { tree.noteChange(.deleted, node, origin: .local) }
        tree.detach(node)
        node.isUnlinked = true
        node.ctime = now
        tree.record([.delete(node.ino), outbox.changed(node.fileID)])
        tree.touchDirectory(directory, now: now)
        tree.releaseIfUnused(node.ino)
    }

    func opendir(_ ino: InodeNumber) throws(FSError) -> OpenDirectory {
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            guard node.kind == .directory else { throw .notDirectory }
            node.openCount += 1
            return OpenDirectory(ino: ino)
        }
    }

    /// Entries of an open directory from `offset` on; offset 0 (or the first read of this handle)
    /// takes a fresh snapshot (`.` and `..` first, then the children sorted by name).
    func readdir(_ handle: OpenDirectory, offset: Int) throws(FSError) -> ArraySlice<OpenDirectory.Entry> {
        if offset == 0 || !handle.hasSnapshot {
            let entries = try live.transact { tree throws(FSError) in
                let node = try tree.node(handle.ino)
                let parentIno = node.parent ?? node.ino
                var entries: [OpenDirectory.Entry] = [
                    .init(name: FileName("."), ino: node.ino, kind: .directory),
                    .init(name: FileName(".."), ino: parentIno, kind: .directory),
                ]
                entries.reserveCapacity(node.children.count + 2)
                for (name, ino) in node.children.sorted(by: { $0.key < $1.key }) {
                    if let child = tree.nodes[ino] { entries.append(.init(name: name, ino: ino, kind: child.kind)) }
                }
                return entries
            }
            handle.replace(with: entries)
        }
        return handle.entries(from: offset)
    }

    /// For readdirplus: the entry reply of a listed child, counting the kernel reference.
    /// Returns nil if the child has gone since the snapshot. Undo with `forget(ino, count: 1)`
    /// if the entry did not fit in the reply.
    func readdirPlusEntry(_ entry: OpenDirectory.Entry) -> EntryReply? {
        live.transact { tree in
            guard let node = tree.nodes[entry.ino] else { return nil }
            return tree.entryReply(for: node)
        }
    }

    /// For readdirplus: the entry replies of listed entries, in one transaction; nil for `.`,
    /// `..` and children gone since the snapshot. Counts a kernel reference for every reply
    /// returned: the caller sends every one (it sized the page first).
    func readdirPlusEntries(_ entries: ArraySlice<OpenDirectory.Entry>) -> [EntryReply?] {
        live.transact { tree in
            entries.map { entry in
                guard !entry.isDot, let node = tree.nodes[entry.ino] else { return nil }
                return tree.entryReply(for: node)
            }
        }
    }

    func releasedir(_ handle: OpenDirectory) {
        live.transact { tree in
            guard let node = tree.nodes[handle.ino] else { return }
            node.openCount -= 1
            tree.releaseIfUnused(node.ino)
        }
    }

    /// Makes every metadata change so far durable (the tree is one database).
    func fsyncdir() throws(FSError) {
        do { try store.commit(durable: true) } catch { throw .io(EIO) }
    }
}
