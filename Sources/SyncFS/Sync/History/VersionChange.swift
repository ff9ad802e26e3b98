import SyncBackend

/// What a version changed against the version before it, as `versions` names it.
enum VersionChange: String {
    case modified, moved, attributes, deleted, restored
    /// The oldest version kept: the container may have pruned older ones (retention), so what it
    /// changed is not known (the entry's creation, or any change).
    case oldestKept = "oldest kept"

    static func between(older: RemoteEntry?, newer: RemoteEntry) -> VersionChange {
        if newer.isDeleted { return .deleted }
        guard let older else { return .oldestKept }
        if older.isDeleted { return .restored }
        let was = older.state
        let now = newer.state
        if was.manifest != now.manifest || was.size != now.size || was.symlinkTarget != now.symlinkTarget {
            return .modified
        }
        if was.parent != now.parent || was.name != now.name { return .moved }
        return .attributes
    }
}
