import Glibc
import Logging
import SyncBackend

/// The tree as the state database holds it, checked against the cache at mount.
extension Namespace {
    /// Builds the tree from `stored` and repairs what a crash left: the root is made if missing,
    /// entries outside the tree are removed, cache files without an entry deleted, file sizes
    /// taken from longer cache files (which hold every byte written before the crash), and lost
    /// content handled — a missing or short cache file (a short one is never a crash's doing:
    /// `TreeTransaction.commitSizeAhead`): a synced, unmodified file becomes a placeholder
    /// again; a modified one `lost`: an error, its edit never uploaded. The repairs are recorded
    /// in `store`.
    static func load(
        _ stored: StoredState, generation: UInt64, store: MetadataStore, cache: ContentCache, outbox: Outbox,
        logger: Logger
    ) throws -> Namespace {
        var stored = stored
        if !stored.entries.contains(where: { $0.ino == .root }) {
            let now = Clock.nowNanoseconds()
            let root = EntryRecord(
                ino: .root, fileID: .root, parent: nil, name: FileName(bytes: []), kind: .directory, mode: 0o755,
                uid: getuid(), gid: getgid(), size: 0, atime: now, mtime: now, ctime: now, symlinkTarget: nil)
            stored.entries.append(root)
            store.entryCreated(root)
        }
        let maxIno = stored.entries.map(\.ino.rawValue).max() ?? 1
        let recordedNext = stored.facts[.nextIno] ?? 0
        var tree = Namespace(
            generation: generation, nextIno: max(maxIno + 1, recordedNext), bases: SyncBases(store: store))
        tree.nodes.reserveCapacity(stored.entries.count)
        tree.byFileID.reserveCapacity(stored.entries.count)
        for record in stored.entries {
            tree.nodes[record.ino] = Node(record: record, xattrs: stored.xattrs[record.ino] ?? [:])
            tree.byFileID[record.fileID] = record.ino
        }
        for (ino, xattrs) in stored.xattrs where xattrs[ConflictNote.attribute] != nil {
            if let node = tree.nodes[ino], let original = ConflictNote.original(in: xattrs) {
                tree.conflictCopies[node.fileID] = original
            }
        }
        loadExclusions(stored.facts[.excludedFolders] ?? [], into: &tree, store: store)
        let orphans = linkChildren(&tree)
        if !orphans.isEmpty {
            logger.warning("removing \(orphans.count) entries that are not in the tree")
            try store.removeOrphans(orphans)
        }
        cache.removeTemporaryFiles()
        reconcileCache(&tree, cache: cache, store: store, outbox: outbox, logger: logger)
        try readBases(of: tree, store: store, outbox: outbox)
        tree.recountAll()
        return tree
    }

    /// The excluded folders (`Namespace+Exclusions`) that are still directories here; an ID that
    /// names nothing any more is dropped from the stored fact.
    private static func loadExclusions(_ stored: Set<FileID>, into tree: inout Namespace, store: MetadataStore) {
        let present = stored.filter { id in
            tree.byFileID[id].flatMap { tree.nodes[$0] }.map { $0.kind == .directory && $0.parent != nil } ?? false
        }
        tree.excludedFolders = present
        if present != stored { store.record([.fact(.excludedFolders, present.isEmpty ? nil : present)]) }
    }

    /// Fills each directory's children (an excluded folder is left out of its parent's); returns
    /// entries that cannot be reached from the root (or from an excluded folder).
    private static func linkChildren(_ tree: inout Namespace) -> [InodeNumber] {
        for node in tree.nodes.values where node.ino != .root && !tree.isExcludedFolder(node) {
            guard let parentIno = node.parent, let parent = tree.nodes[parentIno], parent.kind == .directory else {
                continue
            }
            // One hash of the name in the usual case; a second entry of a taken name is left out.
            if let first = parent.children.updateValue(node.ino, forKey: node.name) {
                parent.children[node.name] = first
                continue
            }
            if node.kind == .directory { parent.subdirectoryCount += 1 }
        }
        let excluded = tree.excludedFolders.compactMap { tree.byFileID[$0] }
        // Distinct: a damaged database could name the root among the excluded folders.
        let roots = Array(Set([.root] + excluded))
        // Each node is in at most one children table (its parent's), so a walk from the roots
        // meets each reachable node once: when it meets as many as there are, none is an orphan
        // (the usual case, told without a set of every inode).
        var met = 0
        var stack = roots
        while let ino = stack.popLast() {
            met += 1
            stack.append(contentsOf: tree.nodes[ino]?.children.values ?? [:].values)
        }
        if met == tree.nodes.count { return [] }
        var reachable: Set<InodeNumber> = Set(roots)
        stack = roots
        while let ino = stack.popLast() {
            for child in tree.nodes[ino]?.children.values ?? [:].values where reachable.insert(child).inserted {
                stack.append(child)
            }
        }
        let orphans = tree.nodes.keys.filter { !reachable.contains($0) }
        for ino in orphans {
            if let node = tree.nodes[ino] { tree.byFileID[node.fileID] = nil }
            tree.nodes[ino] = nil
        }
        return orphans
    }

    private static func reconcileCache(
        _ tree: inout Namespace, cache: ContentCache, store: MetadataStore, outbox: Outbox, logger: Logger
    ) {
        for id in cache.allIDs() where tree.node(withID: id)?.kind != .file {
            cache.remove(id)
        }
        for node in tree.nodes.values where node.kind == .file && !node.isPlaceholder {
            // A placeholder's cache file, if any, holds part of a download: not content of ours.
            let recorded = node.size.load(ordering: .relaxed)
            let actual = cache.size(of: node.fileID)
            switch ContentLifecycle.cacheFileCheck(recorded: recorded, onDisk: actual) {
            case nil: continue
            case .cacheFileLonger:
                // Writes the crash kept from being recorded (the records are committed in
                // batches; a cache file is the newer truth after kill -9): local changes to
                // upload. Never a shrink: a smaller size is committed before a cache file
                // shrinks or is replaced by shorter content (`TreeTransaction.commitSizeAhead`),
                // so a short cache file is damage (below).
                node.size.store(actual ?? recorded, ordering: .relaxed)
                node.apply(.cacheFileLonger, queued: outbox.isPending(node.fileID))
                store.record([.upsert(node.record), outbox.changed(node.fileID)])
            case let event?:
                cacheFileDamaged(
                    node, event: event, onDisk: actual, tree: tree, cache: cache, store: store,
                    outbox: outbox, logger: logger)
            }
        }
    }

    /// A local file's cache file is missing or shorter than recorded (`ContentLifecycle.cacheFileDamaged`):
    /// a synced, unmodified file becomes a placeholder again (the container has it); a modified
    /// one becomes `lost` — its size kept, queued so that the refused upload names it in `status`,
    /// never uploaded.
    private static func cacheFileDamaged(
        _ node: Node, event: ContentLifecycle.Event, onDisk: Int64?, tree: Namespace, cache: ContentCache,
        store: MetadataStore, outbox: Outbox, logger: Logger
    ) {
        let recorded = node.size.load(ordering: .relaxed)
        // Synced: the container has exactly this content (else it is a change, even unqueued).
        let synced =
            tree.bases[node.fileID].map {
                $0.version > 0 && !outbox.isPending(node.fileID)
                    && $0.manifest.reduce(0, { $0 + $1.length }) == recorded
            } ?? false
        let transition = node.apply(event, queued: !synced)
        guard transition.actions.contains(.markLost) else {
            logger.notice("the cached content of \(node.name) was lost; it will be downloaded again when read")
            if transition.actions.contains(.dropCacheFile) { cache.remove(node.fileID) }
            if transition.actions.contains(.recordResidency) { store.entryChanged(node.record) }
            return
        }
        let reason = CacheFileCheck.lostReason(event, recorded: recorded, onDisk: onDisk)
        logger.error("\(node.name) (file \(node.fileID)): \(reason)")
        if !outbox.isPending(node.fileID) { store.record([outbox.changed(node.fileID)]) }
        // Taken at once, so the refusal (and its reason in `status`) comes without the upload delay.
        outbox.expedite(node.fileID)
    }
}
