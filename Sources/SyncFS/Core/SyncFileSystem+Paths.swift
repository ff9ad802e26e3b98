import SyncBackend

/// Paths below the mount point, for the daemon's commands and messages.
extension SyncFileSystem {
    /// The entry at `path` (relative to the mount point, "/"-separated; "" is the root).
    func lookup(path: String) throws(FSError) -> InodeNumber {
        try live.transact { tree throws(FSError) in try tree.node(atPath: path).ino }
    }

    /// The stable identity of the entry `ino`.
    func fileID(of ino: InodeNumber) throws(FSError) -> FileID {
        try live.transact { tree throws(FSError) in try tree.node(ino).fileID }
    }

    /// The path of the entry with `id` below the mount point, if it is in the tree.
    func displayPath(of id: FileID) -> String? { live.displayPath(of: id) }
}

extension TreeTransaction {
    /// The entry at `path` (relative to the mount point, "/"-separated; "" is the root).
    func node(atPath path: String) throws(FSError) -> Node {
        var node = try self.node(.root)
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            if component == "." { continue }
            if component == ".." {
                node = node.parent.flatMap { nodes[$0] } ?? node
                continue
            }
            guard node.kind == .directory, let child = child(of: node, named: FileName(bytes: Array(component.utf8)))
            else { throw .notFound }
            node = child
        }
        return node
    }
}
