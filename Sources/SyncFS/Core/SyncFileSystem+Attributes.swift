import Glibc

/// Attribute changes requested by `setattr`; `nil` fields stay as they are.
struct AttributeChanges: Sendable {
    enum Time: Sendable, Equatable {
        case now
        case at(Int64)
    }
    var mode: UInt32?
    var uid: UInt32?
    var gid: UInt32?
    var size: Int64?
    var atime: Time?
    var mtime: Time?
    var ctime: Int64?
    /// Clear setuid, and setgid if group-executable (the kernel asks on truncate and chown by
    /// unprivileged callers, under killpriv v2).
    var killPrivileges = false
    init() {}
}

extension SyncFileSystem {
    /// Looks `name` up in `parent`; counts a kernel reference on success.
    func lookup(parent: InodeNumber, name: FileName) throws(FSError) -> EntryReply {
        if name.count > FileName.maxLength { throw .nameTooLong }
        return try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            tree.unannouncedNames.lookedUp(parent: parent, name: name)
            guard let node = tree.child(of: directory, named: name) else { throw .notFound }
            return tree.entryReply(for: node)
        }
    }

    /// The kernel dropped `count` references to `ino`.
    func forget(_ ino: InodeNumber, count: UInt64) {
        live.transact { tree in
            if tree.inodes.forget(ino, count: count) { tree.releaseIfUnused(ino) }
        }
    }

    func getattr(_ ino: InodeNumber) throws(FSError) -> FileAttributes {
        try live.transact { tree throws(FSError) in tree.attributes(of: try tree.node(ino)) }
    }

    /// Changes mode, owner, size or times. `handle` is the open file of an `ftruncate`, if any.
    /// Permission checks are the kernel's (`default_permissions`).
    ///
    /// From the echo thread (a content or attribute touch, `InotifyEcho`) it changes nothing
    /// (`EchoCall.setattr`).
    func setattr(
        _ ino: InodeNumber, _ changes: AttributeChanges, handle: OpenFile?, caller: Caller = .thisProcess
    ) throws(FSError) -> FileAttributes {
        if let echoed = echo.request(from: caller) { return try echoed.setattr(ino, size: changes.size) }
        if let size = changes.size {
            guard size >= 0 else { throw .invalidArgument }
            try truncations.truncate(ino, to: size, handle: handle)
        }
        return try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            let now = Clock.nowNanoseconds()
            let modeBefore = node.mode
            let (uidBefore, gidBefore, atimeBefore) = (node.uid, node.gid, node.atime)
            let mtimeBefore = node.mtime.load(ordering: .relaxed)
            if let mode = changes.mode { node.mode = mode & 0o7777 }
            if let uid = changes.uid { node.uid = uid }
            if let gid = changes.gid { node.gid = gid }
            if changes.killPrivileges
                || (changes.uid != nil || changes.gid != nil) && node.kind == .file && changes.mode == nil
            {
                // As local filesystems do: a change of owner clears setuid, and setgid on group-executables.
                node.mode = Node.killingPrivileges(node.mode)
            }
            if let size = changes.size {
                // mtime is not touched here: the kernel owns it under the writeback cache and
                // sends the new value with the same request when it changes it.
                node.size.store(size, ordering: .relaxed)
            }
            switch changes.atime {
            case .now: node.atime = now
            case .at(let time): node.atime = time
            case nil: break
            }
            switch changes.mtime {
            case .now: node.mtime.store(now, ordering: .relaxed)
            case .at(let time): node.mtime.store(time, ordering: .relaxed)
            case nil: break
            }
            node.ctime = changes.ctime ?? now
            // Owner and atime are local; mode, size and mtime sync.
            // (The kernel flushes unchanged times after an xattr change: that is not a change.)
            let syncs =
                node.mode != modeBefore || changes.size != nil || node.mtime.load(ordering: .relaxed) != mtimeBefore
            if !node.isUnlinked {
                if syncs { tree.recordLocalChange(node) } else { tree.recordChange(node) }
                let ownerChanged = node.mode != modeBefore || node.uid != uidBefore || node.gid != gidBefore
                let timesChanged = node.atime != atimeBefore || node.mtime.load(ordering: .relaxed) != mtimeBefore
                if node.openWriters > 0 && !ownerChanged && (handle != nil || changes.size == nil) {
                    // Part of a write burst (ftruncate, the kernel's time updates): reported once
                    // the last writer closes.
                    if changes.size != nil || timesChanged { node.changedSinceEvent.store(true, ordering: .relaxed) }
                } else if changes.size != nil || ownerChanged || timesChanged {
                    tree.noteChange(.modified, node, origin: .local)
                }
            }
            return tree.attributes(of: node)
        }
    }
}
