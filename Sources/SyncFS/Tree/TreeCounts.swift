/// What one node adds to `TreeCounts`, as last counted (`Node.tally`), and, for a directory,
/// what its children inherit from it.
struct NodeTally: Equatable {
    struct Flags: OptionSet, Equatable {
        let rawValue: UInt8
        /// A file in the tree and not below an excluded folder: shown, counted by `status`.
        static let counted = Flags(rawValue: 1 << 0)
        /// A file whose content is here (`Node.contentIsLocal`).
        static let local = Flags(rawValue: 1 << 1)
        /// A counted file pinned by itself or by a folder above it.
        static let pinned = Flags(rawValue: 1 << 2)
        /// Directories: this folder is excluded or lies below an excluded one.
        static let excludesBelow = Flags(rawValue: 1 << 3)
        /// Directories: this folder is pinned or lies below a pinned one.
        static let pinsBelow = Flags(rawValue: 1 << 4)

        static let inherited: Flags = [.excludesBelow, .pinsBelow]
    }

    var flags: Flags = []
    /// A local file's length when counted (0 otherwise); `TreeCounts.localBytes` adds these.
    var size: Int64 = 0
}

/// The file counts `status` shows, kept as the tree changes instead of walked for
/// (doc/PERFORMANCE.md, "status from counters"). Every file is taken as either `local` or `online`
/// here; the few files in another state (queued, transferring, in conflict, written now) are a
/// small set `ContentResidency.cacheUsage` looks at one by one.
///
/// Contract: each node's `tally` is what it adds to these sums; a change of what a tally reads
/// (linked or not, residency, size, pin, exclusion, parent) is followed, before its transaction
/// ends, by `Namespace.recount` of that node: `attach` and `releaseIfUnused` recount at once, and
/// every entry a transaction records (`MetadataChange.upsert`, `.delete`) is recounted when the
/// transaction hands its changes to the store. A folder whose inherited flags change recounts
/// what lies below it.
struct TreeCounts: Equatable {
    /// Counted files.
    var files = 0
    /// Counted files whose content is here.
    var localFiles = 0
    /// Counted files pinned (by themselves or a folder above).
    var pinnedFiles = 0
    /// Lengths of the files whose content is here, counted or not (an excluded folder's kept
    /// files too).
    var localBytes: Int64 = 0

    mutating func add(_ tally: NodeTally, _ sign: Int) {
        let flags = tally.flags
        if flags.contains(.counted) {
            files += sign
            if flags.contains(.local) { localFiles += sign }
            if flags.contains(.pinned) { pinnedFiles += sign }
        }
        localBytes += Int64(sign) * tally.size
    }
}

extension Namespace {
    /// Counts `node` again (see `TreeCounts`); a directory whose inherited flags changed
    /// recounts everything below it (one walk of that subtree: a pin, an exclusion, a move).
    mutating func recount(_ node: Node) {
        var stack = [node]
        while let current = stack.popLast() {
            let before = current.tally
            let after = tally(of: current)
            guard after != before else { continue }
            counts.add(before, -1)
            counts.add(after, 1)
            current.tally = after
            guard current.kind == .directory,
                before.flags.intersection(.inherited) != after.flags.intersection(.inherited)
            else { continue }
            for child in current.children.values { if let next = nodes[child] { stack.append(next) } }
        }
    }

    /// Counts every node from scratch (at load): the root's tree, then each excluded folder's.
    mutating func recountAll() {
        counts = TreeCounts()
        for node in nodes.values { node.tally = NodeTally() }
        var stack: [Node] = [nodes[.root]].compactMap { $0 }
        stack += excludedFolders.compactMap { node(withID: $0) }
        while let current = stack.popLast() {
            current.tally = tally(of: current)
            counts.add(current.tally, 1)
            for child in current.children.values { if let next = nodes[child] { stack.append(next) } }
        }
    }

    /// Drops from `inMotion` the files no longer in motion (closed, not downloading, not
    /// write-failed, their writes recorded) and those gone from the tree.
    mutating func settleInMotion() {
        let settled = inMotion.filter { ino in
            guard let node = nodes[ino] else { return true }
            return node.openWriters == 0 && node.hydration == nil && node.writeFailure == 0
                && !node.hasUnrecordedWrites
        }
        inMotion.subtract(settled)
    }

    /// Files (not in motion) whose tally is not what they add now: a change that was not
    /// followed by a recount. Empty when the contract holds; a walk, for checks only.
    func staleTallies() -> [Node] {
        nodes.values.filter { node in
            node.kind == .file && !inMotion.contains(node.ino) && node.tally != tally(of: node)
        }
    }

    /// What `node` adds now, with its parent's inherited flags as last counted.
    private func tally(of node: Node) -> NodeTally {
        let inherited = node.parent.flatMap { nodes[$0] }?.tally.flags.intersection(.inherited) ?? []
        switch node.kind {
        case .directory:
            var flags = inherited
            if node.isPinned { flags.insert(.pinsBelow) }
            if isExcludedFolder(node) { flags.insert(.excludesBelow) }
            return NodeTally(flags: flags)
        case .symlink:
            return NodeTally()
        case .file:
            guard !node.isUnlinked else { return NodeTally() }
            var flags: NodeTally.Flags = []
            let local = node.contentIsLocal
            if local { flags.insert(.local) }
            if !inherited.contains(.excludesBelow) {
                flags.insert(.counted)
                if node.isPinned || inherited.contains(.pinsBelow) { flags.insert(.pinned) }
            }
            return NodeTally(flags: flags, size: local ? node.size.load(ordering: .relaxed) : 0)
        }
    }
}
