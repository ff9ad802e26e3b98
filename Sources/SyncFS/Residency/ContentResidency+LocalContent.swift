import Glibc
import SyncBackend
import Synchronization

/// How much content the cache holds.
/// What `ContentResidency.countsDisagreement` found: the two answers and the names of files
/// whose tally is stale.
struct CountsDisagreement: Sendable {
    var counted: CacheUsage
    var walked: CacheUsage
    var staleFiles: [String]
}

struct CacheUsage: Sendable, Equatable {
    /// Lengths of the files whose content is here (downloaded or modified).
    var localBytes: Int64 = 0
    /// Lengths of the files with changes not yet uploaded.
    var modifiedBytes: Int64 = 0
    var files = FileCounts()

    /// A local file in `state` holds changes not yet uploaded (its length is in `modifiedBytes`).
    static func holdsChanges(_ state: ContentState) -> Bool {
        state == .modified || state == .uploading || state == .error
    }
}

extension ContentResidency {
    // MARK: State

    /// The visible state of `node` (`user.syncfs.state`; `VisibleContentState`).
    /// `conflicted` (from `conflictedEntries`) saves a look at the conflict index per node in
    /// passes over the whole tree.
    func contentState(of node: Node, in tree: TreeTransaction, conflicted: Set<FileID>? = nil) -> ContentState {
        let id = node.fileID
        // A local change the ignore rules hold: it stays here, never uploaded.
        if outbox.isHeld(id) { return .ignored }
        // A download that failed or was cancelled but whose driver has not yet cleared it is over.
        let running = node.hydration.flatMap { $0.hasEnded ? nil : $0 }
        var content = node.contentState(queued: outbox.isPending(id))
        if content.residency == .hydrating && running == nil { content.residency = .placeholder }
        let visible = VisibleContentState(
            content: content, downloadComplete: running?.isComplete ?? false,
            transfer: running == nil ? transfers.transfer(id)?.direction : nil)
        return visible.value(
            outboxError: outbox.lastError(id) != nil, downloadFailed: transfers.error(id) != nil,
            inConflict: conflicted.map { $0.contains(id) }
                ?? (!tree.conflictCopies.isEmpty && tree.isInConflict(node)))
    }

    /// The last transfer error of `node`, if any.
    func lastError(of node: Node, in tree: TreeTransaction) -> String? {
        outbox.lastError(node.fileID) ?? (node.isPlaceholder ? transfers.error(node.fileID) : nil)
    }

    // MARK: Pins

    /// Pins or unpins `ino`. Unpinning what a directory above pins fails with `.notPermitted`.
    func setPinned(_ ino: InodeNumber, _ pinned: Bool) throws(FSError) {
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            if !pinned && !node.isPinned && tree.pinState(of: node) == .inherited { throw .notPermitted }
            guard node.isPinned != pinned else { return }
            node.isPinned = pinned
            if !node.isUnlinked { tree.recordChange(node) }
        }
        if pinned { pinsChanged() }
    }

    /// The path of the nearest directory above `ino` that is pinned, if any.
    func pinningAncestor(of ino: InodeNumber) -> String? {
        live.transact { tree in
            var current = tree.nodes[ino]?.parent.flatMap { tree.nodes[$0] }
            while let ancestor = current {
                if ancestor.isPinned { return tree.displayPath(of: ancestor) }
                current = ancestor.parent.flatMap { tree.nodes[$0] }
            }
            return nil
        }
    }

    /// Placeholders a pin covers (to download in the background), and whether any node is
    /// pinned (linked or not: while none is, no placeholder can be covered until a pin is set).
    func pinnedPlaceholders() -> (files: [FileID], anyPinned: Bool) {
        live.transact { tree in
            var result: [FileID] = []
            var anyPinned = false
            for node in tree.nodes.values where node.isPinned {
                anyPinned = true
                // A pin below a folder excluded here waits for it to come back.
                if node.isUnlinked || tree.pinState(of: node) == .inherited || tree.isExcluded(node) { continue }
                tree.collectFiles(below: node) { file in
                    if file.isPlaceholder { result.append(file.fileID) }
                }
            }
            return (result, anyPinned)
        }
    }

    /// Placeholders at or below `ino` (for `download`).
    func placeholders(below ino: InodeNumber) throws(FSError) -> [FileID] {
        try live.transact { tree throws(FSError) in
            var result: [FileID] = []
            tree.collectFiles(below: try tree.node(ino)) { if $0.isPlaceholder { result.append($0.fileID) } }
            return result
        }
    }

    // MARK: Usage

    /// What the cache holds now, from the tree's counts (`TreeCounts`): each counted file is
    /// `local` or `online` there, and the few that may be in another state — with an outbox row,
    /// on the transfer board, in a conflict, or in motion (open for writing, downloading,
    /// write-failed) — are looked at one by one. Costs those few, not the tree.
    func cacheUsage() -> CacheUsage {
        live.transact { tree in usageFromCounts(&tree) }
    }

    /// What the cache holds now by one pass over the tree: what `cacheUsage` must equal
    /// (its tests, and daemons started with `SYNCFS_TEST_CHECK_COUNTS`, compare the two).
    func cacheUsageByWalk() -> CacheUsage {
        live.transact { tree in usageLocked(tree) }
    }

    /// The counts' answer and the walk's, taken in one transaction, with the files whose tally
    /// is stale (`Namespace.staleTallies`), if they differ at each of `looks` looks (a file
    /// between two states — an outbox row or a transfer that changes without the namespace lock,
    /// a size stored just before its transaction — can make one look differ; a miscount stays);
    /// nil if they agreed once.
    func countsDisagreement(looks: Int = 5) -> CountsDisagreement? {
        var last: CountsDisagreement?
        for look in 0..<looks {
            let found = live.transact { tree in
                let counted = usageFromCounts(&tree)
                return CountsDisagreement(
                    counted: counted, walked: usageLocked(tree), staleFiles: tree.staleTallies().map { "\($0.name)" })
            }
            if found.counted == found.walked && found.staleFiles.isEmpty { return nil }
            last = found
            if look + 1 < looks { usleep(20_000) }
        }
        return last
    }

    /// The files that may be in another state than `local` or `online` are those the outbox
    /// and the transfer board name (their leaf locks are taken inside the namespace lock, so
    /// nothing they add is missed), those in a conflict, and those in motion.
    private func usageFromCounts(_ tree: inout TreeTransaction) -> CacheUsage {
        let named = outbox.namedIDs.union(transfers.namedIDs)
        let counts = tree.counts
        var usage = CacheUsage()
        usage.files.local = counts.localFiles
        usage.files.online = counts.files - counts.localFiles
        usage.files.pinned = counts.pinnedFiles
        usage.localBytes = counts.localBytes
        let conflicted = tree.conflictedEntries()
        // Those that settled since are looked at once more here (their last change was recounted).
        let apart = Set(named.union(conflicted).compactMap { tree.byFileID[$0] }).union(tree.inMotion)
        tree.settleInMotion()
        for ino in apart {
            guard let node = tree.nodes[ino], node.kind == .file, !node.isUnlinked else { continue }
            let tally = node.tally
            let local = !node.isPlaceholder
            let size = node.size.load(ordering: .relaxed)
            usage.localBytes += (local ? size : 0) - tally.size
            guard tally.flags.contains(.counted) || local else { continue }
            let state = contentState(of: node, in: tree, conflicted: conflicted)
            if tally.flags.contains(.counted) {
                usage.files.move(from: tally.flags.contains(.local) ? .local : .online, to: state)
            }
            if local && CacheUsage.holdsChanges(state) { usage.modifiedBytes += size }
        }
        return usage
    }

    /// One pass, each file's state computed once, and whether a folder is pinned (or below a
    /// pinned one) found once per folder: the pass holds the tree's lock, so every FUSE call
    /// waits for it.
    private func usageLocked(_ tree: TreeTransaction) -> CacheUsage {
        var usage = CacheUsage()
        let conflicted = tree.conflictedEntries()
        var pinnedFolders: [InodeNumber: Bool] = [:]
        for node in tree.nodes.values where node.kind == .file && !node.isUnlinked {
            // A file below a folder excluded here is not counted (its bytes are, while kept).
            let counted = !tree.isExcluded(node)
            let local = !node.isPlaceholder
            guard counted || local else { continue }
            let state = contentState(of: node, in: tree, conflicted: conflicted)
            if counted {
                let pinned = node.isPinned || Self.isPinnedFolder(node.parent, in: tree, known: &pinnedFolders)
                usage.files.add(state, pinned: pinned)
            }
            guard local else { continue }
            let size = node.size.load(ordering: .relaxed)
            usage.localBytes += size
            if CacheUsage.holdsChanges(state) { usage.modifiedBytes += size }
        }
        return usage
    }

    /// Whether folder `start` is pinned or lies below a pinned folder (`pinState` of its files is
    /// then not `.none`), with the answers for the folders walked through kept in `known`.
    private static func isPinnedFolder(
        _ start: InodeNumber?, in tree: TreeTransaction, known: inout [InodeNumber: Bool]
    ) -> Bool {
        var walked: [InodeNumber] = []
        var answer = false
        var current = start
        while let ino = current {
            if let found = known[ino] {
                answer = found
                break
            }
            guard let folder = tree.nodes[ino] else { break }
            walked.append(ino)
            if folder.isPinned {
                answer = true
                break
            }
            current = folder.parent
        }
        for ino in walked { known[ino] = answer }
        return answer
    }
}

extension ContentResidency {
    /// The state of one entry, for `status PATH` (the daemon makes its `PathStatus` of it).
    func pathStatus(_ ino: InodeNumber) throws(FSError) -> EntryStatus {
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            let attributes = tree.attributes(of: node)
            var progress: (done: Int64, total: Int64)?
            if let transfer = transfers.transfer(node.fileID) {
                progress = (transfer.done, transfer.total)
            } else if let hydration = node.hydration {
                let (done, total) = hydration.progress
                progress = (done, total)
            }
            var files: FileCounts?
            var localBytes: Int64 = 0
            var totalBytes = attributes.size
            switch node.kind {
            case .file:
                localBytes = node.isPlaceholder ? cache.allocatedBytes(of: node.fileID) : attributes.size
            case .directory:
                var counts = FileCounts()
                totalBytes = 0
                tree.collectFiles(below: node) { file in
                    counts.add(contentState(of: file, in: tree), pinned: tree.pinState(of: file) != .none)
                    let size = file.size.load(ordering: .relaxed)
                    totalBytes += size
                    if !file.isPlaceholder {
                        localBytes += size
                    } else if let download = transfers.transfer(file.fileID) {
                        // Downloading: what has arrived counts (byte progress inside large files).
                        localBytes += min(download.done, size)
                    }
                }
                files = counts
            case .symlink: break
            }
            return EntryStatus(
                path: tree.displayPath(of: node), kind: node.kind, state: contentState(of: node, in: tree),
                pinned: tree.pinState(of: node), size: attributes.size, localBytes: localBytes,
                progress: progress, error: lastError(of: node, in: tree), files: files, totalBytes: totalBytes)
        }
    }
}
