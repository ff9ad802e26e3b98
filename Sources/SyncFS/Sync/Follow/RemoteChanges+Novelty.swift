import SyncBackend

extension RemoteChanges {
    /// What the feed entry `entry` is to this mount before it is applied (`SyncRounds` counts
    /// it): a new entry, a newer version of one it has, the removal of one it has, or nil —
    /// nothing new (known at that version, e.g. this mount's own commit coming back, or the
    /// deletion of an entry never here). One look at the tree, in its own short transaction.
    func novelty(of entry: RemoteEntry) -> SyncRounds.Novelty? {
        live.transact { tree in
            if let base = tree.bases[entry.id], base.version >= entry.version { return nil }
            let here = tree.node(withID: entry.id).map { !$0.isUnlinked } ?? false
            if entry.isDeleted { return here ? .removed : nil }
            return here ? .changed : .added
        }
    }
}
