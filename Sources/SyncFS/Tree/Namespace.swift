import SyncBackend

/// The live tree: every node by inode number, and the kernel's references to them.
///
/// Lives inside `SyncFileSystem`'s one lock. Nodes that are unlinked but still referenced (by the
/// kernel's lookup count or by open handles) stay in `nodes` with `isUnlinked` set until both
/// drop to zero; then `releaseIfUnused` removes them and asks for their cache file to go.
struct Namespace {
    var nodes: [InodeNumber: Node] = [:]
    /// Every node by file ID (unlinked nodes included until they are released).
    var byFileID: [FileID: InodeNumber] = [:]
    var inodes: InodeTable
    var nextIno: UInt64
    /// What each synced entry last agreed with the container (see `SyncBase`), read from the
    /// state database (`SyncBases`).
    let bases: SyncBases
    /// Conflict copies (and files with conflict markers) → the entry each was split from: an
    /// index of the `user.syncfs.conflict` attributes, checked against the nodes when read.
    var conflictCopies: [FileID: FileID] = [:]
    /// Folders excluded from this device (selective sync, `Namespace+Exclusions`): each keeps its
    /// parent and name but is not among its parent's children, so nothing below it is visible.
    var excludedFolders: Set<FileID> = []
    /// The file counts `status` shows, kept as nodes change (`TreeCounts`).
    var counts = TreeCounts()
    /// Files that may be in a state the counts do not tell (written through an open handle,
    /// downloading): `status` looks at each, and drops those no longer in motion.
    var inMotion: Set<InodeNumber> = []
    /// Names changed behind the kernel's back that it has not been told of yet.
    var unannouncedNames = UnannouncedNames()

    init(generation: UInt64, nextIno: UInt64, bases: SyncBases) {
        inodes = InodeTable(generation: generation)
        self.nextIno = nextIno
        self.bases = bases
    }

    /// A fresh inode number. The caller records `nextIno` (the `next_ino` fact) in the same
    /// batch as the new entry, so numbers are never reused while the state directory lives.
    mutating func allocateIno() -> InodeNumber {
        defer { nextIno += 1 }
        return InodeNumber(nextIno)
    }

    func node(_ ino: InodeNumber) throws(FSError) -> Node {
        guard let node = nodes[ino] else { throw .notFound }
        return node
    }

    func directory(_ ino: InodeNumber) throws(FSError) -> Node {
        let node = try node(ino)
        guard node.kind == .directory else { throw .notDirectory }
        guard !node.isUnlinked else { throw .notFound }
        return node
    }

    func child(of parent: Node, named name: FileName) -> Node? {
        parent.children[name].flatMap { nodes[$0] }
    }

    /// Puts `node` into `parent` under `name` (no checks: callers have made them).
    mutating func attach(_ node: Node, to parent: Node, as name: FileName) {
        node.parent = parent.ino
        node.name = name
        node.isUnlinked = false
        parent.children[name] = node.ino
        if node.kind == .directory { parent.subdirectoryCount += 1 }
        nodes[node.ino] = node
        byFileID[node.fileID] = node.ino
        recount(node)
    }

    /// The directory with this file ID if it is in the tree (linked).
    func liveDirectory(withID id: FileID) -> Node? {
        guard let node = node(withID: id), !node.isUnlinked, node.kind == .directory else { return nil }
        return node
    }

    /// The node with this file ID, linked or not.
    func node(withID id: FileID) -> Node? {
        byFileID[id].flatMap { nodes[$0] }
    }

    /// Takes `node` out of its parent's children (its record goes on being its own).
    mutating func detach(_ node: Node) {
        guard let parentIno = node.parent, let parent = nodes[parentIno] else { return }
        if parent.children[node.name] == node.ino {
            parent.children[node.name] = nil
            if node.kind == .directory { parent.subdirectoryCount -= 1 }
        }
        node.parent = nil
    }

    /// True if `candidate` is `ancestor` or lies below it.
    func isSameOrBelow(_ candidate: Node, _ ancestor: Node) -> Bool {
        var current: Node? = candidate
        while let node = current {
            if node.ino == ancestor.ino { return true }
            current = node.parent.flatMap { nodes[$0] }
        }
        return false
    }

    /// Drops an unlinked node that nothing references any more. Returns it if it was dropped.
    mutating func releaseIfUnused(_ ino: InodeNumber) -> Node? {
        guard let node = nodes[ino], node.isUnlinked, node.openCount == 0, !inodes.isReferenced(ino) else {
            return nil
        }
        recount(node)
        nodes[ino] = nil
        if byFileID[node.fileID] == ino { byFileID[node.fileID] = nil }
        return node
    }
}
