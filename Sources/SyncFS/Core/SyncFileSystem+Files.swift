import Glibc
import SyncBackend

extension SyncFileSystem {
    /// Creates and opens a regular file (`O_CREAT`; `O_EXCL` is the kernel's, which looked first).
    func create(parent: InodeNumber, name: FileName, mode: UInt32, flags: Int32, caller: Caller)
        throws(FSError) -> (EntryReply, OpenFile)
    {
        let name = try name.validated()
        return try residency.openingWithDownloads(for: caller.pid) { () throws(FSError) in
            try createOrOpen(parent: parent, name: name, mode: mode, flags: flags, caller: caller)
        }
    }

    private func createOrOpen(parent: InodeNumber, name: FileName, mode: UInt32, flags: Int32, caller: Caller)
        throws(FSError) -> Opening<(EntryReply, OpenFile)>
    {
        try live.transact { tree throws(FSError) -> Opening<(EntryReply, OpenFile)> in
            let directory = try tree.directory(parent)
            if let existing = tree.child(of: directory, named: name) {
                // The kernel checks first, but a concurrent create may have won the race.
                if flags & O_EXCL != 0 { throw .exists }
                switch existing.kind {
                case .directory: throw .isDirectory
                case .symlink: throw .exists
                case .file: break
                }
                if let reserved = try residency.placeholderNeedingContent(existing, flags: flags, in: &tree) {
                    return .needsContent(reserved)
                }
                let handle = try openHandle(existing, flags: flags, tree: &tree)
                return .opened((tree.entryReply(for: existing), handle))
            }
            if tree.child(of: directory, named: name) != nil { throw .exists }
            let (fileID, descriptor): (FileID, Int32)
            if let spare = spares.take() {
                (fileID, descriptor) = spare
            } else {
                (fileID, descriptor) = try newCacheFile()
            }
            let node: Node
            do throws(FSError) {
                node = try makeNode(
                    .file, in: directory, name: name, mode: mode, caller: caller, fileID: fileID, tree: &tree)
            } catch {
                close(descriptor)
                cache.remove(fileID)
                throw error
            }
            let handle = OpenFile(node: node, descriptor: descriptor, writable: flags & O_ACCMODE != O_RDONLY)
            node.openCount += 1
            if handle.writable { node.openWriters += 1 }
            node.lastUsed = Clock.nowNanoseconds()
            return .opened((tree.entryReply(for: node), handle))
        }
    }

    /// A new empty cache file when no spare is ready.
    private func newCacheFile() throws(FSError) -> (FileID, Int32) {
        let id = FileID.random()
        return (id, try cache.createAndOpen(id))
    }

    /// `mknod`: regular files are made; devices, FIFOs and sockets cannot be synced → EPERM.
    func mknod(parent: InodeNumber, name: FileName, mode: UInt32, caller: Caller) throws(FSError)
        -> EntryReply
    {
        if let echoed = echo.request(from: caller) {
            return try echoed.create(parent: parent, name: name, kind: .file)
        }
        guard mode & UInt32(S_IFMT) == UInt32(S_IFREG) || mode & UInt32(S_IFMT) == 0 else { throw .notPermitted }
        let name = try name.validated()
        return try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            let node = try makeNode(.file, in: directory, name: name, mode: mode, caller: caller, tree: &tree)
            try cache.create(node.fileID)
            return tree.entryReply(for: node)
        }
    }

    /// Opens a file. `O_TRUNC` by an unprivileged caller also clears setuid/setgid.
    /// A placeholder is downloaded first when opened for writing without `O_TRUNC`; with
    /// `O_TRUNC` it becomes an empty local file at once. Opening for reading downloads nothing.
    ///
    /// While a placeholder is downloaded for writing, it counts as open for writing (remote
    /// changes wait, uploads wait); the open re-checks in its transaction, so a file evicted or
    /// replaced meanwhile is downloaded again rather than written as a placeholder.
    ///
    /// Opening an unlinked node for writing (or with `O_TRUNC`), or one whose content is gone,
    /// fails with `ESTALE`: the kernel can still resolve a name to a node a remote change just
    /// replaced or deleted (its cached name is dropped a moment after the change), and then looks
    /// the name up again.
    ///
    /// The echo thread's open (a content touch, `InotifyEcho`) downloads nothing and counts as
    /// neither open nor writing (`EchoCall.open`).
    func open(_ ino: InodeNumber, flags: Int32, caller: Caller) throws(FSError) -> OpenFile {
        if let echoed = echo.request(from: caller) { return try echoed.open(ino) }
        // Writes never meet an unchecked cached copy (a damaged one is downloaded first).
        if flags & O_ACCMODE != O_RDONLY && flags & O_TRUNC == 0, let node = try? live.transact({ try $0.node(ino) }) {
            residency.verifyBeforeWriting(node)
        }
        return try residency.openingWithDownloads(for: caller.pid) { () throws(FSError) in
            try live.transact { tree throws(FSError) -> Opening<OpenFile> in
                let node = try tree.node(ino)
                switch node.kind {
                case .directory: throw .isDirectory
                case .symlink: throw .loop
                case .file: break
                }
                // A name the kernel resolved just before a remote change replaced or deleted the
                // file leads to the node that change unlinked: writes there would reach no file
                // and never sync, and a replaced file's old content is gone (only handles opened
                // before keep it). ESTALE makes the kernel look the name up again and open what
                // it leads to now, as if the open came after the change. A local unlink racing an
                // open keeps POSIX behaviour (the open gets the unlinked file, as on any disk).
                if node.isUnlinked
                    && ((node.removedRemotely && (flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0))
                        || (!node.isPlaceholder && access(cache.path(for: node.fileID), F_OK) != 0))
                {
                    throw .stale
                }
                if let reserved = try residency.placeholderNeedingContent(node, flags: flags, in: &tree) {
                    return .needsContent(reserved)
                }
                if flags & O_TRUNC != 0 && caller.uid != 0 && Node.hasSetID(node.mode) {
                    node.mode = Node.killingPrivileges(node.mode)
                    if !node.isUnlinked { tree.recordLocalChange(node) }
                }
                return .opened(try openHandle(node, flags: flags, tree: &tree))
            }
        }
    }

    /// Clears setuid/setgid after a write by an unprivileged caller.
    private func killPrivileges(_ node: Node) {
        live.transact { tree in
            node.mode = Node.killingPrivileges(node.mode)
            node.ctime = Clock.nowNanoseconds()
            if !node.isUnlinked { tree.recordLocalChange(node) }
        }
        kernelAttributesChanged(node.ino)
    }

    /// Opens the node's cache file; honours `O_TRUNC`.
    private func openHandle(_ node: Node, flags: Int32, tree: inout TreeTransaction) throws(FSError) -> OpenFile {
        // Lost content (`ContentLifecycle.openedForWriting` / `openedTruncating`): only `O_TRUNC`
        // may write again (every byte afterwards is one a program wrote); reads fail in
        // `ensureContent`.
        let truncatesLost = node.contentLost && flags & O_TRUNC != 0
        // (A placeholder opened for writing got its content first: `placeholderNeedingContent`.)
        if flags & O_TRUNC == 0 && flags & O_ACCMODE != O_RDONLY && node.contentIsLocal
            && node.apply(.openedForWriting, queued: tree.outbox.isPending(node.fileID)).actions.contains(
                .failWithIOError)
        {
            throw .io(EIO)
        }
        let descriptor = try cache.open(node.fileID)
        node.openCount += 1
        node.lastUsed = Clock.nowNanoseconds()
        let accessMode = flags & O_ACCMODE
        let handle = OpenFile(node: node, descriptor: descriptor, writable: accessMode != O_RDONLY)
        if handle.writable { node.openWriters += 1 }
        // Linux truncates on O_TRUNC even with O_RDONLY (the kernel checked write permission).
        // `O_TRUNC` is the way out of lost content and of a failed write (`WriteFailures`).
        if flags & O_TRUNC != 0 && node.contentIsLocal { tree.truncatedToZero(node) }
        if flags & O_TRUNC != 0 && (node.size.load(ordering: .relaxed) != 0 || truncatesLost) {
            node.beginContentChange()
            defer { node.endContentChange() }
            let sizeBefore = recordShrink(node, to: 0, in: &tree)
            if ftruncate(descriptor, 0) != 0 {
                let failure = FSError.fromErrno()
                if let sizeBefore { restoreSize(node, to: sizeBefore, in: &tree) }
                close(descriptor)
                node.openCount -= 1
                node.openWriters -= 1
                throw failure
            }
            let now = Clock.nowNanoseconds()
            node.size.store(0, ordering: .relaxed)
            node.mtime.store(now, ordering: .relaxed)
            node.ctime = now
            node.changedSinceEvent.store(true, ordering: .relaxed)
            if !node.isUnlinked { tree.recordLocalChange(node) }
        }
        return handle
    }

    /// The write path, the adapter's one call: refuses a placeholder's handle (`ESTALE`: opening
    /// for writing downloads first, so this is a guard, not a path), slows the writer while
    /// modified content exceeds the cache budget, brackets the change of the cache file (so an
    /// upload reading it without a lock knows), and records it (`noteWritten`). `copy` moves the
    /// bytes into the cache file's descriptor — `pwrite`, or a splice from the kernel's pipe —
    /// and returns how many it wrote (all `count`), or a negative errno. No lock is taken.
    ///
    /// A full or failing disk (doc/SEMANTICS.md, "Full disk"): a write the reserve of the state
    /// database does not admit fails with ENOSPC, and a failed copy makes the file write-failed
    /// (`noteWriteFailed`); either way the error goes to the program.
    func write(
        _ handle: OpenFile, offset: Int64, count: Int, fromPageCache: Bool = false, caller: () -> Caller,
        copy: (_ descriptor: Int32) -> Int
    ) throws(FSError) -> Int {
        guard handle.node.contentIsLocal else { throw .stale }
        residency.throttleWriteIfOverBudget()
        handle.node.beginContentChange()
        defer { handle.node.endContentChange() }
        guard let copied = admittedWrite(count, { copy(handle.descriptor) }) else {
            noteWriteFailed(handle.node, code: ENOSPC)
            throw .fromErrno(ENOSPC)
        }
        guard copied >= 0 else {
            noteWriteFailed(handle.node, code: Int32(-copied))
            throw .fromErrno(Int32(-copied))
        }
        noteWritten(handle, offset: offset, count: copied, fromPageCache: fromPageCache, caller: caller)
        return copied
    }

    /// Writes `count` bytes at `offset` (`write` with `pwrite`).
    func write(
        _ handle: OpenFile, _ bytes: UnsafeRawPointer, count: Int, offset: Int64, fromPageCache: Bool = false,
        caller: () -> Caller
    ) throws(FSError) -> Int {
        try write(handle, offset: offset, count: count, fromPageCache: fromPageCache, caller: caller) { descriptor in
            var done = 0
            while done < count {
                let written = pwrite(descriptor, bytes + done, count - done, off_t(offset) + off_t(done))
                if written < 0 {
                    if errno == EINTR { continue }
                    return -Int(errno)
                }
                done += written
            }
            return count
        }
    }

    /// Records that `count` bytes were written at `offset` into the handle's descriptor. A write by an unprivileged
    /// caller clears setuid/setgid; `caller` is asked only when such bits are set.
    /// `fromPageCache`: the kernel's write-back of cached pages (possibly long after the program's
    /// write); the kernel owns mtime for those and sends it with `setattr`, so it is not touched.
    private func noteWritten(
        _ handle: OpenFile, offset: Int64, count: Int, fromPageCache: Bool = false, caller: () -> Caller
    ) {
        if !fromPageCache && handle.node.hasSetIDBits.load(ordering: .relaxed) && caller().uid != 0 {
            killPrivileges(handle.node)
        }
        handle.wrote.store(true, ordering: .relaxed)
        handle.node.noteWrite(end: offset + Int64(count), now: fromPageCache ? nil : Clock.nowNanoseconds())
    }

    /// Records what was written through `handle` (size and mtime go to the store). On `close`.
    func flush(_ handle: OpenFile) {
        guard handle.wrote.exchange(false, ordering: .relaxed) else { return }
        live.transact { tree in
            if !handle.node.isUnlinked { tree.recordLocalChange(handle.node) }
        }
    }

    /// The last close of a handle: records, closes the descriptor, drops an unlinked node.
    func release(_ handle: OpenFile) {
        flush(handle)
        if handle.descriptor >= 0 { close(handle.descriptor) }
        // The echo thread's handle was never counted (the kernel may still have written back
        // another program's pages through it: `flush` recorded those).
        if handle.isEcho { return }
        let lastClose = live.transact { tree -> Bool in
            handle.node.openCount -= 1
            handle.node.lastUsed = Clock.nowNanoseconds()
            residency.stopUnneededHydration(of: handle.node, in: &tree)
            if handle.writable { handle.node.openWriters -= 1 }
            if handle.node.openWriters == 0 { tree.noteContentChangeEnded(handle.node) }
            tree.releaseIfUnused(handle.node.ino)
            return handle.node.openCount == 0
        }
        if lastClose { residency.noteMaybeEvictable() }
    }

    /// Makes the file's content and all metadata recorded so far durable.
    func fsync(_ handle: OpenFile, dataOnly: Bool) throws(FSError) {
        let synced = dataOnly ? fdatasync(handle.descriptor) : Glibc.fsync(handle.descriptor)
        if synced != 0 { throw .fromErrno() }
        flush(handle)
        if changeEvents.isObserved && handle.node.changedSinceEvent.load(ordering: .relaxed) {
            live.transact { tree in tree.noteContentChangeEnded(handle.node) }
        }
        if !handle.node.cacheEntryDurable.load(ordering: .relaxed) {
            try cache.syncDirectory(of: handle.node.fileID)
            handle.node.cacheEntryDurable.store(true, ordering: .relaxed)
        }
        do { try store.commit(durable: true) } catch { throw .io(EIO) }
    }

    /// `fallocate` mode 0: reserves space and grows the file if needed. Other modes: EOPNOTSUPP.
    func fallocate(_ handle: OpenFile, mode: Int32, offset: Int64, length: Int64) throws(FSError) {
        guard mode == 0 else { throw .notSupported }
        guard offset >= 0, length > 0 else { throw .invalidArgument }
        handle.node.beginContentChange()
        defer { handle.node.endContentChange() }
        let rc = posix_fallocate(handle.descriptor, off_t(offset), off_t(length))
        if rc != 0 { throw .fromErrno(rc) }
        handle.wrote.store(true, ordering: .relaxed)
        var info = stat()
        if fstat(handle.descriptor, &info) == 0 {
            handle.node.noteWrite(end: Int64(info.st_size), now: Clock.nowNanoseconds())
        }
    }

    /// `lseek` with SEEK_DATA / SEEK_HOLE, answered from the cache file's own holes. While the file
    /// is open for writing the kernel may hold dirty pages the cache file lacks, so they are
    /// written back first (otherwise written data could be reported as a hole).
    ///
    /// A placeholder is all data (its holes are not known until it is downloaded): `SEEK_DATA`
    /// returns `offset`, `SEEK_HOLE` the file's end, so copying tools read every byte.
    func lseek(_ handle: OpenFile, offset: Int64, whence: Int32) throws(FSError) -> Int64 {
        if !handle.node.contentIsLocal {
            let size = handle.node.size.load(ordering: .relaxed)
            guard offset >= 0 else { throw .invalidArgument }
            guard offset < size else { throw .beyondData }
            return whence == SeekWhence.hole ? size : offset
        }
        let writers = live.transact { _ in handle.node.openWriters }
        if writers > 0 { kernelWriteBackPages(handle.node.ino) }
        let result = Glibc.lseek(handle.descriptor, off_t(offset), whence)
        if result < 0 { throw errno == ENXIO ? .beyondData : .fromErrno() }
        return Int64(result)
    }
}
