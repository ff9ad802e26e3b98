import Glibc

/// Truncations that shrink a file record the smaller size before the cache file shrinks
/// (`TreeTransaction.commitSizeAhead`): after a crash, a cache file shorter than its recorded
/// size is then damage, never a truncation the crash kept from being recorded.
///
/// Uses what holds the tree (`FolderParts`: the tree, the cache files, the logger) and the
/// residency (a placeholder's content is needed before a cut that keeps bytes).
final class Truncations: Sendable, HoldsTheTree {
    let parts: FolderParts
    private let residency: ContentResidency

    init(parts: FolderParts, residency: ContentResidency) {
        self.parts = parts
        self.residency = residency
    }

    /// Cuts the content of `ino` to `size` bytes (`setattr` with a size; `handle`: the open file
    /// of an `ftruncate`, if any). A placeholder gets its content first, unless cut to 0; a file
    /// whose copy is not yet checked is checked first (`ContentResidency.prepareForWriting`). A
    /// shrink is recorded before the cache file is cut (`recordShrink`).
    func truncate(_ ino: InodeNumber, to size: Int64, handle: OpenFile?) throws(FSError) {
        let node = try live.transact { tree throws(FSError) in try tree.node(ino) }
        switch node.kind {
        case .directory: throw .isDirectory
        case .symlink: throw .invalidArgument
        case .file: break
        }
        try residency.prepareForWriting(node, truncatingTo: size)
        node.beginContentChange()
        defer { node.endContentChange() }
        let sizeBefore = recordShrink(node, to: size)
        do throws(FSError) {
            if let handle {
                if ftruncate(handle.descriptor, off_t(size)) != 0 { throw .fromErrno() }
            } else {
                let descriptor = try cache.open(node.fileID)
                defer { close(descriptor) }
                if ftruncate(descriptor, off_t(size)) != 0 { throw .fromErrno() }
            }
        } catch {
            if let sizeBefore { restoreSize(node, to: sizeBefore) }
            throw error
        }
        // The size goes with the cache file before the change ends: an upload taken in between
        // must never see a cache file shorter than the recorded size (it would be taken for lost).
        node.size.store(size, ordering: .relaxed)
    }

    /// Before `node`'s cache file is cut to `size` bytes: lowers its size in memory and commits
    /// it. Returns the size before, or nil if it was not larger (nothing done).
    func recordShrink(_ node: Node, to size: Int64) -> Int64? {
        live.transact { tree in recordShrink(node, to: size, in: &tree) }
    }

    /// `recordShrink` inside a transaction.
    func recordShrink(_ node: Node, to size: Int64, in tree: inout TreeTransaction) -> Int64? {
        let before = node.size.load(ordering: .relaxed)
        guard size < before else { return nil }
        node.size.store(size, ordering: .relaxed)
        do {
            try tree.commitSizeAhead(of: node, size: size)
        } catch {
            logger.warning("could not record the new size of \(node.name) before truncating it: \(error)")
        }
        return before
    }

    /// The truncation after `recordShrink` failed (the cache file kept its length): the size in
    /// memory goes back to `size`, recorded with the batch.
    func restoreSize(_ node: Node, to size: Int64) {
        live.transact { tree in restoreSize(node, to: size, in: &tree) }
    }

    /// `restoreSize` inside a transaction.
    func restoreSize(_ node: Node, to size: Int64, in tree: inout TreeTransaction) {
        node.size.store(size, ordering: .relaxed)
        if !node.isUnlinked { tree.recordLocalChange(node) }
    }
}
