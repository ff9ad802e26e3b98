/// The listings of open directories (`opendir`, `readdir`, readdirplus, `releasedir`): each open
/// directory holds a snapshot of its entries (`OpenDirectory`), taken at its first read and again
/// whenever a read starts over at offset 0, so a listing in pages never skips or repeats a name.
///
/// Uses the tree only. An open directory counts as open on its node (kept while the kernel or a
/// handle refers to it).
final class DirectoryListing: Sendable {
    private let live: LiveTree

    init(live: LiveTree) { self.live = live }

    func opendir(_ ino: InodeNumber) throws(FSError) -> OpenDirectory {
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            guard node.kind == .directory else { throw .notDirectory }
            node.openCount += 1
            return OpenDirectory(ino: ino)
        }
    }

    /// Entries of an open directory from `offset` on; offset 0 (or the first read of this handle)
    /// takes a fresh snapshot (`.` and `..` first, then the children sorted by name).
    func readdir(_ handle: OpenDirectory, offset: Int) throws(FSError) -> ArraySlice<OpenDirectory.Entry> {
        if offset == 0 || !handle.hasSnapshot {
            let entries = try live.transact { tree throws(FSError) in
                let node = try tree.node(handle.ino)
                let parentIno = node.parent ?? node.ino
                var entries: [OpenDirectory.Entry] = [
                    .init(name: FileName("."), ino: node.ino, kind: .directory),
                    .init(name: FileName(".."), ino: parentIno, kind: .directory),
                ]
                entries.reserveCapacity(node.children.count + 2)
                for (name, ino) in node.children.sorted(by: { $0.key < $1.key }) {
                    if let child = tree.nodes[ino] { entries.append(.init(name: name, ino: ino, kind: child.kind)) }
                }
                return entries
            }
            handle.replace(with: entries)
        }
        return handle.entries(from: offset)
    }

    /// For readdirplus: the entry reply of a listed child, counting the kernel reference.
    /// Returns nil if the child has gone since the snapshot. Undo with `forget(ino, count: 1)`
    /// if the entry did not fit in the reply.
    func readdirPlusEntry(_ entry: OpenDirectory.Entry) -> EntryReply? {
        live.transact { tree in
            guard let node = tree.nodes[entry.ino] else { return nil }
            return tree.entryReply(for: node)
        }
    }

    /// For readdirplus: the entry replies of listed entries, in one transaction; nil for `.`,
    /// `..` and children gone since the snapshot. Counts a kernel reference for every reply
    /// returned: the caller sends every one (it sized the page first).
    func readdirPlusEntries(_ entries: ArraySlice<OpenDirectory.Entry>) -> [EntryReply?] {
        live.transact { tree in
            entries.map { entry in
                guard !entry.isDot, let node = tree.nodes[entry.ino] else { return nil }
                return tree.entryReply(for: node)
            }
        }
    }

    func releasedir(_ handle: OpenDirectory) {
        live.transact { tree in
            guard let node = tree.nodes[handle.ino] else { return }
            node.openCount -= 1
            tree.releaseIfUnused(node.ino)
        }
    }
}
