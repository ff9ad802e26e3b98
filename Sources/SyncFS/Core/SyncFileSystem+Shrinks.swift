/// Truncations that shrink a file record the smaller size before the cache file shrinks
/// (`TreeTransaction.commitSizeAhead`): after a crash, a cache file shorter than its recorded
/// size is then damage, never a truncation the crash kept from being recorded.
extension SyncFileSystem {
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
