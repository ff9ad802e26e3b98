import Glibc
import SyncBackend

/// A call the echo thread made on the mount, as the FUSE handler serving it answers (see
/// `InotifyEcho`; the follower's side is `RemoteEcho`). Got from `EchoRequests.request(from:)`:
/// a create, unlink/rmdir or rename applies the pending remote change it carries; a setattr or
/// open (a touch) changes nothing.
struct EchoCall {
    let requests: EchoRequests

    /// The echo thread's mknod, mkdir or symlink: the pending remote change applied, and the
    /// entry the kernel takes as created (counting its reference).
    func create(parent: InodeNumber, name: FileName, kind: NodeKind) throws(FSError) -> EntryReply {
        guard let entry = try apply(.create(parent: parent, name: name, kind: kind)) else { throw .io(EAGAIN) }
        return entry
    }

    /// The echo thread's unlink or rmdir: the pending remote change applied.
    func remove(parent: InodeNumber, name: FileName) throws(FSError) {
        _ = try apply(.remove(parent: parent, name: name))
    }

    /// The echo thread's rename: the pending remote change applied.
    func move(parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName) throws(FSError) {
        _ = try apply(.move(parent: parent, name: name, newParent: newParent, newName: newName))
    }

    /// `setattr` by the echo thread: changes nothing and answers the attributes. A `size` in it is
    /// a content touch's `truncate(path, same size)`, which the kernel carries out on its side:
    /// it cuts its page cache to the size answered. Under the writeback cache a program's write
    /// stays in that cache until it is written back (at the latest when the program closes the
    /// file), so a program that opened the file after the remote change and has written to it
    /// would lose its write without an error (a lost append of the convergence test). The touch
    /// is therefore refused (`EBUSY`; it then shows no `IN_MODIFY`, the writer's own close does)
    /// while the file is open for writing, or when it no longer has that size (written and closed
    /// since). The kernel holds the inode lock for the whole truncate, so no write can start
    /// between this check and the cut.
    func setattr(_ ino: InodeNumber, size: Int64?) throws(FSError) -> FileAttributes {
        try requests.live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            if let size, node.openWriters > 0 || node.size.load(ordering: .relaxed) != size {
                throw .io(EBUSY)
            }
            return tree.attributes(of: node)
        }
    }

    /// `open` by the echo thread: a handle on the cache file of a local file that counts as
    /// neither open nor writing and records nothing; for a placeholder, a handle without a
    /// descriptor (nothing downloads; a placeholder has no dirty pages to write back through it).
    func open(_ ino: InodeNumber) throws(FSError) -> OpenFile {
        try requests.live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            guard node.kind == .file else { throw .isDirectory }
            let descriptor = node.isPlaceholder ? -1 : ((try? requests.cache.open(node.fileID)) ?? -1)
            return OpenFile(node: node, descriptor: descriptor, writable: true, isEcho: true)
        }
    }

    /// A structural call of the echo thread, as the FUSE adapter handed it over.
    private enum Operation {
        case create(parent: InodeNumber, name: FileName, kind: NodeKind)
        case remove(parent: InodeNumber, name: FileName)
        case move(parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName)
    }

    /// Applies the pending remote change `operation` carries, in one transaction, and says
    /// whether the call did what the kernel will believe it did. Creates return the new entry
    /// (counting the kernel's reference). Throws if it did not (the kernel then keeps its view;
    /// invalidations follow after the call).
    private func apply(_ operation: Operation) throws(FSError) -> EntryReply? {
        guard let echo = requests.channel.current else { throw .io(EAGAIN) }
        return try requests.live.transact { tree throws(FSError) -> EntryReply? in
            try echo.pending.withLock { slot throws(FSError) -> EntryReply? in
                guard case .waiting(let change) = slot, matches(operation, change, in: tree) else {
                    throw .io(EAGAIN)
                }
                var application = RemoteApplication(wantsTouch: true)
                let plan = change.apply(tree: &tree, into: &application)
                // Sent by the follower once the echo's request is answered, not from this handler.
                application.invalidations = tree.takeInvalidations()
                slot = .done(plan, application)
                let node = tree.node(withID: change.entry.id).flatMap { $0.isUnlinked ? nil : $0 }
                switch operation {
                case .create(let parent, let name, let kind):
                    guard case .apply = plan, let node, node.parent == parent, node.name == name, node.kind == kind
                    else { throw .io(EAGAIN) }
                    return tree.entryReply(for: node)
                case .remove:
                    guard node == nil else { throw .notEmpty }
                    return nil
                case .move(_, _, let newParent, let newName):
                    guard let node, node.parent == newParent, node.name == newName else { throw .io(EAGAIN) }
                    return nil
                }
            }
        }
    }

    /// True if the echo thread's call is the pending change's step.
    private func matches(_ operation: Operation, _ change: PendingRemoteChange, in tree: TreeTransaction) -> Bool {
        let entry = change.entry
        let parentIno = entry.state.parent.flatMap { tree.node(withID: $0)?.ino }
        switch (operation, change.step) {
        case (.create(let parent, let name, let kind), .create):
            return !entry.isDeleted && parentIno == parent && name == FileName(bytes: entry.state.name)
                && kind == entry.state.kind
        case (.remove(let parent, let name), .remove):
            return entry.isDeleted && tree.nodes[parent].flatMap { tree.child(of: $0, named: name) }?.fileID == entry.id
        case (.move(let parent, let name, let newParent, let newName), .move):
            return !entry.isDeleted
                && tree.nodes[parent].flatMap { tree.child(of: $0, named: name) }?.fileID == entry.id
                && parentIno == newParent && newName == FileName(bytes: entry.state.name)
        default:
            return false
        }
    }
}
