import Glibc
import SyncBackend
import Synchronization

/// Why `evict` kept a file.
enum EvictOutcome: Sendable, Equatable {
    case evicted(bytes: Int64)
    case alreadyOnline
    case refused(String)
}

/// How much content the cache holds.
struct CacheUsage: Sendable {
    /// Lengths of the files whose content is here (downloaded or modified).
    var localBytes: Int64 = 0
    /// Lengths of the files with changes not yet uploaded.
    var modifiedBytes: Int64 = 0
    var files = FileCounts()
}

extension ContentResidency {
    // MARK: State

    /// The visible state of `node` (`user.syncfs.state`; `VisibleContentState`).
    /// `conflicted` (from `conflictedEntries`) saves a look at the conflict index per node in
    /// passes over the whole tree.
    func contentState(of node: Node, in tree: TreeTransaction, conflicted: Set<FileID>? = nil) -> ContentState {
        let id = node.fileID
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

    /// Whether `node` is kept downloaded.
    func pinState(of node: Node, in tree: TreeTransaction) -> PinState {
        if node.isPinned { return .pinned }
        var current = node.parent.flatMap { tree.nodes[$0] }
        while let ancestor = current {
            if ancestor.isPinned { return .inherited }
            current = ancestor.parent.flatMap { tree.nodes[$0] }
        }
        return .none
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
            if !pinned && !node.isPinned && pinState(of: node, in: tree) == .inherited { throw .notPermitted }
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
                if node.isUnlinked || pinState(of: node, in: tree) == .inherited { continue }
                collectFiles(below: node, in: tree) { file in
                    if file.isPlaceholder { result.append(file.fileID) }
                }
            }
            return (result, anyPinned)
        }
    }

    /// Calls `body` for every file at or below `node`.
    func collectFiles(below node: Node, in tree: TreeTransaction, _ body: (Node) -> Void) {
        var stack = [node]
        while let current = stack.popLast() {
            if current.kind == .file { body(current) }
            for child in current.children.values { if let next = tree.nodes[child] { stack.append(next) } }
        }
    }

    /// Placeholders at or below `ino` (for `download`).
    func placeholders(below ino: InodeNumber) throws(FSError) -> [FileID] {
        try live.transact { tree throws(FSError) in
            var result: [FileID] = []
            collectFiles(below: try tree.node(ino), in: tree) { if $0.isPlaceholder { result.append($0.fileID) } }
            return result
        }
    }

    // MARK: Eviction

    /// Frees the local content of every file at or below `ino`; returns each file's outcome by path.
    /// The kernel's cached pages of evicted files are dropped too (a later read downloads). A
    /// download whose bytes have all arrived — it only syncs and records the file now, as right
    /// after a program read the whole file — is waited for first (at most
    /// `finishingDownloadWait`), so the file is evicted rather than kept as being downloaded.
    func evict(below ino: InodeNumber) throws(FSError) -> [(path: String, outcome: EvictOutcome)] {
        waitForFinishingDownloads(below: ino)
        return try live.transact { tree throws(FSError) in
            var files: [Node] = []
            collectFiles(below: try tree.node(ino), in: tree) { files.append($0) }
            var results: [(String, EvictOutcome)] = []
            for file in files {
                let outcome = evictLocked(file, tree: &tree)
                if case .evicted = outcome { tree.invalidate(.content(file.ino)) }
                results.append((tree.displayPath(of: file), outcome))
            }
            return results
        }
    }

    /// How long `evict` waits for downloads that have all their bytes to finish.
    static let finishingDownloadWait: Duration = .seconds(5)

    /// Waits (together at most `finishingDownloadWait`) for every download at or below `ino`
    /// whose chunks are all here to end.
    private func waitForFinishingDownloads(below ino: InodeNumber) {
        let finishing: [Hydration] = live.transact { tree in
            guard let top = tree.nodes[ino] else { return [] }
            var found: [Hydration] = []
            collectFiles(below: top, in: tree) { node in
                if node.isPlaceholder, let hydration = node.hydration, hydration.isComplete { found.append(hydration) }
            }
            return found
        }
        let deadline = ContinuousClock.now + Self.finishingDownloadWait
        for hydration in finishing {
            do throws(FSError) {
                try hydration.waitUntilFinished(stops: { ContinuousClock.now >= deadline })
            } catch {
                // Failed, or still syncing at the deadline: the eviction then says why it keeps it.
            }
        }
    }

    /// Evicts one file if it is clean, closed and not pinned. The store is handed the placeholder
    /// state before the cache file goes; a crash before it commits leaves a local node without a
    /// cache file, which the sweep at mount turns back into a placeholder.
    private func evictLocked(_ node: Node, tree: inout TreeTransaction) -> EvictOutcome {
        guard node.kind == .file, !node.isUnlinked else { return .refused("not a file") }
        let id = node.fileID
        let queued = outbox.isPending(id)
        if node.isPlaceholder {
            // The machine's `evict` of a placeholder: a running download refuses, else the
            // bytes of an earlier, unfinished download are freed too.
            let transition = node.apply(.evict, queued: queued)
            guard !transition.actions.contains(.refuseEviction) else { return .refused("is being downloaded") }
            if node.openCount == 0 && transition.actions.contains(.dropCacheFile) { cache.remove(id) }
            return .alreadyOnline
        }
        let size = node.size.load(ordering: .relaxed)
        guard node.contentState(queued: queued) == ContentLifecycle.State(.local, .clean),
            let base = tree.bases[id], base.version > 0, base.manifest.reduce(0, { $0 + $1.length }) == size
        else { return .refused("has changes not yet uploaded") }
        guard node.openCount == 0, node.openWriters == 0 else { return .refused("is open") }
        // A write or truncate in progress, or one not yet recorded: the cache file is not the base.
        guard node.contentToken() != nil, cache.size(of: id) == size else { return .refused("is being written") }
        guard pinState(of: node, in: tree) == .none else { return .refused("is pinned") }
        // The machine's `evict` of a clean local file: the placeholder state is recorded before
        // the cache file goes (the caller drops the kernel's pages: `invalidateKernelCache`).
        let transition = node.apply(.evict, queued: queued)
        guard !transition.actions.contains(.refuseEviction) else { return .refused("has changes not yet uploaded") }
        if transition.actions.contains(.recordResidency) { tree.recordChange(node) }
        if transition.actions.contains(.dropCacheFile) { cache.remove(id) }
        return .evicted(bytes: size)
    }

    // MARK: Budget

    /// What the cache holds now (one pass over the tree).
    func cacheUsage() -> CacheUsage {
        live.transact { tree in usageLocked(tree) }
    }

    private func usageLocked(_ tree: TreeTransaction) -> CacheUsage {
        var usage = CacheUsage()
        let conflicted = tree.conflictedEntries()
        for node in tree.nodes.values where node.kind == .file && !node.isUnlinked {
            let state = contentState(of: node, in: tree, conflicted: conflicted)
            usage.files.add(state, pinned: pinState(of: node, in: tree) != .none)
            guard !node.isPlaceholder else { continue }
            let size = node.size.load(ordering: .relaxed)
            usage.localBytes += size
            if state == .modified || state == .uploading || state == .error { usage.modifiedBytes += size }
        }
        return usage
    }

    /// Keeps the local content within `budget` bytes: evicts the least recently used clean,
    /// closed, unpinned files until under 90% of it; slows writers down while modified content
    /// alone exceeds it. Returns the number of files evicted.
    ///
    /// Cost: one pass over the tree in one transaction, without other locks (the pending set is taken
    /// before), so the once-a-second check does not stall file operations.
    @discardableResult
    func enforceBudget(_ budget: Int64) -> Int {
        let pending = Set(outbox.items.map(\.fileID))
        let evicted = live.transact { tree -> Int in
            var localBytes: Int64 = 0
            var modifiedBytes: Int64 = 0
            for node in tree.nodes.values where node.kind == .file && !node.isUnlinked && !node.isPlaceholder {
                let size = node.size.load(ordering: .relaxed)
                localBytes += size
                if pending.contains(node.fileID) || node.hasUnrecordedWrites {
                    modifiedBytes += size
                }
            }
            writesThrottled.store(modifiedBytes > budget, ordering: .relaxed)
            guard localBytes > budget else {
                overBudget.store(false, ordering: .relaxed)
                return 0
            }
            var excess = localBytes - budget / 10 * 9
            let candidates = tree.nodes.values.filter {
                $0.kind == .file && !$0.isUnlinked && !$0.isPlaceholder && $0.openCount == 0
            }.sorted { $0.lastUsed < $1.lastUsed }
            var count = 0
            for node in candidates where excess > 0 {
                if case .evicted(let bytes) = evictLocked(node, tree: &tree) {
                    excess -= bytes
                    count += 1
                    tree.invalidate(.content(node.ino))
                }
            }
            overBudget.store(excess > 0, ordering: .relaxed)
            return count
        }
        if evicted > 0 { logger.info("cache budget: evicted \(evicted) files") }
        return evicted
    }

    /// A file may have become evictable (its last close; an upload that left it clean): while the
    /// last budget check left the cache over its budget, the keeper looks again (within a second;
    /// an idle keeper would otherwise look only at its idle check).
    func noteMaybeEvictable() {
        if overBudget.load(ordering: .relaxed) { contentActivity.note() }
    }

    /// The write path: while modified content exceeds the cache budget, each write waits a little
    /// so uploads can catch up (writers slow down; they never fail). Also wakes the budget keeper.
    func throttleWriteIfOverBudget() {
        contentActivity.note()
        if writesThrottled.load(ordering: .relaxed) { usleep(50_000) }
    }

    // MARK: Paths

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
                collectFiles(below: node, in: tree) { file in
                    counts.add(contentState(of: file, in: tree), pinned: pinState(of: file, in: tree) != .none)
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
                pinned: pinState(of: node, in: tree), size: attributes.size, localBytes: localBytes,
                progress: progress, error: lastError(of: node, in: tree), files: files, totalBytes: totalBytes)
        }
    }
}
