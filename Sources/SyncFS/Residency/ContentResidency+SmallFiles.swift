import SyncBackend

/// Small files read whole by the daemon itself (the rules file, merge inputs).
extension ContentResidency {
    /// The whole content of a small file (downloading it first if it is a placeholder), or nil
    /// if it is not a regular file, larger than `limit`, or cannot be read.
    func readSmallFile(_ ino: InodeNumber, limit: Int) -> [UInt8]? {
        guard
            let node = live.transact({ tree -> Node? in
                guard let node = tree.nodes[ino], node.kind == .file, !node.isUnlinked,
                    node.size.load(ordering: .relaxed) <= Int64(limit)
                else { return nil }
                return node
            })
        else { return nil }
        if (try? hydrateCompletely(node)) == nil { return nil }
        guard case .success(let bytes) = LocalFileIO.readAll(cache.path(for: node.fileID)), bytes.count <= limit
        else { return nil }
        return bytes
    }
}
