/// A file's recorded size never runs ahead of its cache file: before a cache file is cut short,
/// or its content replaced by shorter content, the smaller size is in the state database. So
/// after a crash a cache file shorter than its recorded size is damage (cut short while the
/// daemon was stopped: a cleaning tool, a person, a failing disk), never a change the crash kept
/// from being recorded (`Namespace.load`). Growth needs nothing: a cache file longer than
/// recorded holds writes a crash kept from being recorded, and is taken.
extension TreeTransaction {
    /// Commits now, before `node`'s cache file is cut to `size` bytes or replaced by `size` bytes
    /// of other content, `node`'s record with that size and its change queued (in one batch,
    /// with everything recorded before). After a crash the cache file then holds at least `size`
    /// bytes: taken as written, and uploaded. Call only when `size` is smaller than the size the
    /// database may hold; the node's size in memory is the caller's (a truncation lowers it
    /// first, so that nothing recorded meanwhile carries the old one). Nothing for an unlinked
    /// node (it has no record). Throws if the database cannot be written (a full disk): the
    /// caller goes on, and a crash before the next commit then makes the file `lost`, the safe
    /// side.
    mutating func commitSizeAhead(of node: Node, size: Int64) throws {
        guard !node.isUnlinked else { return }
        var record = node.record
        record.size = size
        // A change already queued keeps its row (committed below with everything recorded).
        let queued = outbox.isPending(node.fileID)
        self.record(queued ? [.upsert(record)] : [.upsert(record), outbox.changed(node.fileID)])
        try commitRecordedNow()
    }
}
