import SyncBackend

/// The order in which a commit writes a batch of recorded changes: what a later change
/// supersedes is dropped (`coalesced`), and the rows of randomly keyed tables go in key order
/// (`inWriteOrder`). Neither changes the stored state the batch leaves.
extension MetadataStore {
    /// The batch without upserts that a later upsert or delete of the same entry (or a later
    /// value of the same fact) supersedes: a directory whose row changed with each of 1,000
    /// creates is written once. Deletes and xattr changes keep their order; the batch's end state
    /// is unchanged (an upsert replaces the whole row).
    static func coalesced(_ changes: [MetadataChange]) -> [MetadataChange] {
        var lastEntryChange: [InodeNumber: Int] = [:]
        var lastFact: [String: Int] = [:]
        var lastOutbox: [FileID: Int] = [:]
        var lastBase: [FileID: Int] = [:]
        for (index, change) in changes.enumerated() {
            switch change {
            case .upsert(let entry): lastEntryChange[entry.ino] = index
            case .delete(let ino): lastEntryChange[ino] = index
            case .setMeta(let key, _): lastFact[key] = index
            case .outboxPut(let item): lastOutbox[item.fileID] = index
            case .outboxRemove(let id): lastOutbox[id] = index
            case .syncBaseSet(let id, _, _), .syncBaseRemove(let id): lastBase[id] = index
            case .setXattr, .removeXattr: break
            }
        }
        var result: [MetadataChange] = []
        result.reserveCapacity(lastEntryChange.count + lastFact.count)
        for (index, change) in changes.enumerated() {
            switch change {
            case .upsert(let entry): if lastEntryChange[entry.ino] == index { result.append(change) }
            case .setMeta(let key, _): if lastFact[key] == index { result.append(change) }
            case .outboxPut(let item): if lastOutbox[item.fileID] == index { result.append(change) }
            case .outboxRemove(let id): if lastOutbox[id] == index { result.append(change) }
            case .syncBaseSet(let id, _, _), .syncBaseRemove(let id): if lastBase[id] == index { result.append(change) }
            case .delete, .setXattr, .removeXattr: result.append(change)
            }
        }
        return result
    }

    /// A coalesced batch with its sync-base changes moved to the end in key order (every other
    /// change keeps its place). Each entry has at most one of them after `coalesced`, and no other
    /// table refers to `sync_base`, so the stored state is the same; its B-tree is keyed by random
    /// file IDs, and writing a batch's rows in key order visits each page once instead of
    /// thrashing SQLite's page cache (and spilling its dirty pages early) during a big attach.
    static func inWriteOrder(_ changes: [MetadataChange]) -> [MetadataChange] {
        func baseID(_ change: MetadataChange) -> FileID? {
            switch change {
            case .syncBaseSet(let id, _, _), .syncBaseRemove(let id): return id
            default: return nil
            }
        }
        // Most commits (a few changes of a running mount) have nothing to move: no copy then.
        guard changes.lazy.compactMap(baseID).dropFirst().first != nil else { return changes }
        var bases = changes.compactMap { change in baseID(change).map { (id: $0, change: change) } }
        bases.sort { ($0.id.high, $0.id.low) < ($1.id.high, $1.id.low) }
        return changes.filter { baseID($0) == nil } + bases.map(\.change)
    }
}
