import SyncBackend

/// Taking a folder out of sight and bringing it back (selective sync, `Namespace+Exclusions`).
/// The tree's side only: the checks and the freeing of content are `SelectiveSync`'s.
extension TreeTransaction {
    /// Takes `folder` out of its parent's children (it keeps its parent and name) and records
    /// it as excluded; the kernel forgets the name. Nothing is queued: the container keeps it.
    /// The kernel is told the name is stale, not that the folder was deleted: a deleted folder's
    /// inode is dead for good in the kernel, and `include` brings back this very inode.
    mutating func hideExcludedFolder(_ folder: Node) {
        guard let parentIno = folder.parent, let parent = nodes[parentIno] else { return }
        if parent.children[folder.name] == folder.ino {
            parent.children[folder.name] = nil
            parent.subdirectoryCount -= 1
        }
        excludedFolders.insert(folder.fileID)
        recount(folder)
        record(.fact(.excludedFolders, excludedFolders))
        // The synced ignore files below are out of sight now: the rules are read again.
        rulesWatch.touched()
        parentEntriesChanged(parent)
        invalidate(.entry(parent: parentIno, name: folder.name))
    }

    /// Links the excluded `folder` back into its parent under its name and ends its exclusion.
    /// A local entry made at that name meanwhile is kept as a conflict copy (a selective sync
    /// conflict: `moveToConflictName`, queued, with a `conflict` event). Nil if its parent is no
    /// longer a folder in the tree.
    mutating func showExcludedFolder(_ folder: Node, host: DeviceName) -> Node? {
        guard let parentIno = folder.parent, let parent = nodes[parentIno], parent.kind == .directory,
            !parent.isUnlinked
        else { return nil }
        if let occupant = child(of: parent, named: folder.name), occupant.ino != folder.ino {
            _ = moveToConflictName(
                occupant, in: parent, of: folder.fileID, host: host, origin: .local, reason: Self.selectiveSyncReason)
        }
        excludedFolders.remove(folder.fileID)
        record(.fact(.excludedFolders, excludedFolders.isEmpty ? nil : excludedFolders))
        attach(folder, to: parent, as: folder.name)
        // The synced ignore files below are in sight again: their rules apply from now on.
        rulesWatch.touched()
        parentEntriesChanged(parent)
        invalidate(.entry(parent: parentIno, name: folder.name))
        return parent
    }

    /// The container moved the excluded `folder`: it follows, still out of sight (no name is
    /// taken from a local entry; `showExcludedFolder` settles that when it comes back).
    mutating func moveExcludedFolder(_ folder: Node, to parent: Node, as name: FileName) {
        folder.parent = parent.ino
        folder.name = name
        recount(folder)
    }

    /// The container deleted `node`: if it was an excluded folder, its exclusion ends with it.
    mutating func endExclusionOfDeleted(_ node: Node) {
        guard excludedFolders.remove(node.fileID) != nil else { return }
        recount(node)
        record(.fact(.excludedFolders, excludedFolders.isEmpty ? nil : excludedFolders))
    }

    /// The excluded folders' paths below the mount point (as they would be if shown), sorted.
    func excludedPaths() -> [(id: FileID, path: String)] {
        excludedFolders.compactMap { id in node(withID: id).map { (id, displayPath(of: $0)) } }
            .sorted { $0.path < $1.path }
    }

    /// A directory's entries changed here without a local change to upload: its ctime moves
    /// (programs comparing stats notice), the kernel's attributes of it are dropped.
    private mutating func parentEntriesChanged(_ parent: Node) {
        parent.ctime = Clock.nowNanoseconds()
        recordChange(parent)
        invalidate(.attributes(parent.ino))
    }
}
