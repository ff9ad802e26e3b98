import SyncBackend

/// The tree's side of the tree check (`TreeChecker`): what this mount applied, and the
/// corrections when it is not what the container holds.
extension RemoteChanges {
    /// The version of every live entry applied here: those with a sync base whose node is in
    /// the tree (a tombstone kept as the base of this mount's own delete is not live); no root.
    func appliedVersions() -> [FileID: EntryVersion] {
        live.transact { tree in
            tree.bases.versions { id in id != .root && tree.node(withID: id).map { !$0.isUnlinked } == true }
        }
    }

    /// The version of the sync base of `id`, nil if it has none.
    func baseVersion(of id: FileID) -> EntryVersion? {
        live.transact { tree in tree.bases[id]?.version }
    }

    /// The path of `id` in the tree, nil if it is not there.
    func pathInTree(_ id: FileID) -> String? {
        live.transact { tree in
            guard let node = tree.node(withID: id), !node.isUnlinked else { return nil }
            return tree.displayPath(of: node)
        }
    }

    /// Removes `id` here as a remote delete would, and drops its queued change: the container
    /// has never held it (a server this mount used before made it up), so nothing of it may be
    /// uploaded. Its sync base goes too. A directory that still holds entries made here is kept
    /// and becomes a new directory of this mount (uploaded as such, with them); its entries that
    /// came from the same server are removed before it (callers remove deeper entries first).
    /// Returns the path it had, nil if it was not in the tree.
    func removeUnvouched(_ id: FileID) -> String? {
        live.transact { tree -> String? in
            tree.record(outbox.remove(id))
            guard let node = tree.node(withID: id), !node.isUnlinked, let parentIno = node.parent,
                let parent = tree.nodes[parentIno]
            else {
                tree.removeBase(id)
                return nil
            }
            let path = tree.displayPath(of: node)
            // Version 0: a directory kept for the entries made in it is created anew.
            let tombstone = RemoteEntry(
                id: id, version: 0, isDeleted: true, device: "",
                state: EntryState(
                    parent: parent.fileID, name: node.name.bytes, kind: node.kind, mode: node.mode,
                    mtime: node.mtime.load(ordering: .relaxed), size: 0))
            guard applyDeletion(tombstone, tree: &tree) else { return nil }
            return path
        }
    }

    /// Drops the sync base of `id` unless it is at `version`, so that the container's entry at
    /// `version` is applied even where this mount holds a newer-looking version (which only a
    /// server that lied can have given it). Returns false, and keeps the base, while a local
    /// change of the entry is queued: its upload meets the container's version as a conflict.
    func forgetBase(of id: FileID, unlessAt version: EntryVersion) -> Bool {
        live.transact { tree -> Bool in
            guard let base = tree.bases[id], base.version != version else { return true }
            guard !outbox.isPending(id) else { return false }
            tree.removeBase(id)
            return true
        }
    }
}
