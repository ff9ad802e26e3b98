import Glibc
import SyncBackend

/// The data path of open files: writes into a handle's cache file (`write`), `flush`, `fsync`,
/// `fallocate`, `lseek` and the last close (`release`). No lock is held across the I/O on content:
/// a write brackets its change of the cache file on the node (`beginContentChange`) and records
/// it afterwards; the tree's lock is taken only to record.
///
/// Uses what holds the tree (`FolderParts`: the tree, the store that makes it durable, the cache),
/// the residency (the write throttle, downloads nobody waits for once closed, eviction after the
/// last close) and the change events (a burst of writes reported once it ends).
final class OpenFileIO: Sendable, HoldsTheTree {
    let parts: FolderParts
    private let residency: ContentResidency
    private let changeEvents: ChangeEvents

    init(parts: FolderParts, residency: ContentResidency, changeEvents: ChangeEvents) {
        self.parts = parts
        self.residency = residency
        self.changeEvents = changeEvents
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
        residency.eviction.throttleWriteIfOverBudget()
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

    /// Clears setuid/setgid after a write by an unprivileged caller.
    private func killPrivileges(_ node: Node) {
        live.transact { tree in
            node.mode = Node.killingPrivileges(node.mode)
            node.ctime = Clock.nowNanoseconds()
            if !node.isUnlinked { tree.recordLocalChange(node) }
        }
        live.perform([.attributes(node.ino)])
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
            residency.hydrations.stopUnneededHydration(of: handle.node, in: &tree)
            if handle.writable {
                handle.node.openWriters -= 1
                // A rules or ignore file is not read while open for writing: read it at its close.
                if handle.node.openWriters == 0 { tree.noteRulesFileClosed(handle.node) }
            }
            if handle.node.openWriters == 0 { tree.noteContentChangeEnded(handle.node) }
            tree.releaseIfUnused(handle.node.ino)
            return handle.node.openCount == 0
        }
        if lastClose { residency.eviction.noteMaybeEvictable() }
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
        if writers > 0 { live.perform([.content(handle.node.ino)]) }
        let result = Glibc.lseek(handle.descriptor, off_t(offset), whence)
        if result < 0 { throw errno == ENXIO ? .beyondData : .fromErrno() }
        return Int64(result)
    }
}
