import SyncBackend

/// One entry of `events --snapshot` (doc/CLI.md, "events"): what `status PATH` says of it.
struct SnapshotEntry: Sendable {
    var path: String
    var fileID: FileID
    var kind: NodeKind
    var size: Int64
    var state: ContentState
    /// A transfer or download in progress: bytes done of total.
    var progress: (done: Int64, total: Int64)?
}

/// The whole list of entries below a path at one moment, for a live query (`events --snapshot`).
extension SyncFileSystem {
    /// The entry at `path` (the root left out) and every entry below it, in one transaction, and
    /// what `atTheSameMoment` returns, called in that transaction too (under the namespace lock,
    /// so no change falls between the list and, say, a subscription it makes). No entries if
    /// `path` is not in the tree.
    func snapshot<Moment>(
        below path: String, _ atTheSameMoment: () -> Moment
    ) -> (entries: [SnapshotEntry], moment: Moment) {
        live.transact { tree -> (entries: [SnapshotEntry], moment: Moment) in
            let top: Node
            do { top = try tree.node(atPath: path) } catch { return ([], atTheSameMoment()) }
            let conflicted = tree.conflictedEntries()
            var entries: [SnapshotEntry] = []
            var stack = [(node: top, path: top.ino == .root ? "" : tree.displayPath(of: top))]
            while let item = stack.popLast() {
                let (node, nodePath) = item
                if node.ino != .root {
                    entries.append(
                        SnapshotEntry(
                            path: nodePath, fileID: node.fileID, kind: node.kind,
                            size: tree.attributes(of: node).size,
                            state: residency.contentState(of: node, in: tree, conflicted: conflicted),
                            progress: progress(of: node)))
                }
                let prefix = nodePath.isEmpty ? "" : nodePath + "/"
                for (name, child) in node.children.sorted(by: { $0.key < $1.key })
                    .reversed()
                {
                    guard let next = tree.nodes[child] else { continue }
                    stack.append((next, prefix + String(decoding: name.bytes, as: UTF8.self)))
                }
            }
            return (entries, atTheSameMoment())
        }
    }

    /// The visible state of the entry with `id` now; nil if it is not in the tree.
    func contentState(ofFileID id: FileID) -> ContentState? {
        live.transact { tree in
            tree.node(withID: id).flatMap { $0.isUnlinked ? nil : residency.contentState(of: $0, in: tree) }
        }
    }

    private func progress(of node: Node) -> (done: Int64, total: Int64)? {
        if let transfer = transfers.transfer(node.fileID) { return (transfer.done, transfer.total) }
        return node.hydration?.progress
    }
}
