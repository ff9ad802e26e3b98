import SyncBackend

/// The order in which this mount's queued deletes below a refused folder delete go
/// (`ConflictDecision.Action.uploadOwnDeletesFirst`): deepest first, so each folder's delete finds
/// it empty. The index comes from the sync bases' parents, which a hostile container wrote: a
/// cycle of parents, an entry listed under two folders or under itself ends the walk and lists
/// each entry once (never the folder itself).
enum OwnDeletesOrder {
    /// The entries below `folder` in `index` (folder → the queued deletes whose base parent it
    /// is), followed down through the folders among them, deepest level first.
    static func deepestFirst(below folder: FileID, in index: [FileID: [FileID]]) -> [FileID] {
        var seen: Set<FileID> = [folder]
        var levels: [[FileID]] = []
        var level = index[folder] ?? []
        while !level.isEmpty {
            let fresh = level.filter { seen.insert($0).inserted }
            if !fresh.isEmpty { levels.append(fresh) }
            level = fresh.flatMap { index[$0] ?? [] }
        }
        return Array(levels.reversed().joined())
    }
}
