import SyncBackend

/// Folders excluded from this device (selective sync; doc/SEMANTICS.md, "Selective sync").
///
/// An excluded folder stays in `nodes` with its record, its parent and its name, but is not
/// among its parent's children: lookups, `readdir` and paths from the mount point never reach
/// it or anything below it, and the kernel never learns of them. The follower goes on applying
/// the container's changes to it and below it (as placeholders, without downloads), so
/// including it again only links it back.
extension Namespace {
    /// True if `node` is an excluded folder or lies below one.
    ///
    /// Cost: a walk up to the root (one set lookup per ancestor); callers are the follower, the
    /// event path when somebody observes, and the control commands, never a plain read or write.
    func isExcluded(_ node: Node) -> Bool {
        guard !excludedFolders.isEmpty else { return false }
        var current: Node? = node
        var steps = 0
        while let this = current, steps < 4096 {
            if excludedFolders.contains(this.fileID) { return true }
            current = this.parent.flatMap { nodes[$0] }
            steps += 1
        }
        return false
    }

    /// Whether an excluded folder lies directly in `directory`: it is not empty then (`rmdir`
    /// and a rename over it say ENOTEMPTY), as the container still holds that folder in it.
    /// Costs nothing while no folder is excluded.
    func holdsExcludedFolder(_ directory: Node) -> Bool {
        excludedFolders.contains { id in node(withID: id)?.parent == directory.ino }
    }

    /// The excluded folder `node` itself (not merely below one).
    func isExcludedFolder(_ node: Node) -> Bool {
        !excludedFolders.isEmpty && excludedFolders.contains(node.fileID)
    }
}
