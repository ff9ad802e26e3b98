import Glibc
import SyncBackend

/// Opening regular files: `create` (a new file, or the existing one when a concurrent create won)
/// and the work of `open` once the echo's requests are set apart (`SyncFileSystem.open`). A
/// placeholder opened for writing gets its content first (`ContentResidency.openingWithDownloads`);
/// `O_TRUNC` cuts the cache file, recorded first (`Truncations.recordShrink`).
///
/// Uses what holds the tree (`FolderParts`: the tree, the cache files), the residency (downloads
/// before writing, checks of cached copies), the truncations and the spare cache files made
/// ahead of time for `create`.
final class FileOpener: Sendable, HoldsTheTree {
    let parts: FolderParts
    private let residency: ContentResidency
    private let truncations: Truncations
    private let spares: SpareCacheFiles

    init(parts: FolderParts, residency: ContentResidency, truncations: Truncations, spares: SpareCacheFiles) {
        self.parts = parts
        self.residency = residency
        self.truncations = truncations
        self.spares = spares
    }

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
                node = try tree.makeNode(.file, in: directory, name: name, mode: mode, caller: caller, fileID: fileID)
            } catch {
                close(descriptor)
                cache.remove(fileID)
                throw error
            }
            let handle = OpenFile(node: node, descriptor: descriptor, writable: flags & O_ACCMODE != O_RDONLY)
            node.openCount += 1
            if handle.writable { tree.noteWriterOpened(node) }
            node.lastUsed = Clock.nowNanoseconds()
            return .opened((tree.entryReply(for: node), handle))
        }
    }

    /// A new empty cache file when no spare is ready.
    private func newCacheFile() throws(FSError) -> (FileID, Int32) {
        let id = FileID.random()
        return (id, try cache.createAndOpen(id))
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
    func open(_ ino: InodeNumber, flags: Int32, caller: Caller) throws(FSError) -> OpenFile {
        // Writes never meet an unchecked cached copy (a damaged one is downloaded first).
        if flags & O_ACCMODE != O_RDONLY && flags & O_TRUNC == 0, let node = try? live.transact({ try $0.node(ino) }) {
            residency.cacheVerifier.verifyBeforeWriting(node)
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
        if handle.writable { tree.noteWriterOpened(node) }
        // Linux truncates on O_TRUNC even with O_RDONLY (the kernel checked write permission).
        // `O_TRUNC` is the way out of lost content and of a failed write (`WriteFailures`).
        if flags & O_TRUNC != 0 && node.contentIsLocal { tree.truncatedToZero(node) }
        if flags & O_TRUNC != 0 && (node.size.load(ordering: .relaxed) != 0 || truncatesLost) {
            node.beginContentChange()
            defer { node.endContentChange() }
            let sizeBefore = truncations.recordShrink(node, to: 0, in: &tree)
            if ftruncate(descriptor, 0) != 0 {
                let failure = FSError.fromErrno()
                if let sizeBefore { truncations.restoreSize(node, to: sizeBefore, in: &tree) }
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
}
