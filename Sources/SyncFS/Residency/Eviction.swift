import Glibc
import SyncBackend
import Synchronization

/// Why `evict` kept a file.
enum EvictOutcome: Sendable, Equatable {
    case evicted(bytes: Int64)
    case alreadyOnline
    case refused(String)
}

/// Freeing local content: files evicted on request (`evict`, the `evict` command) and to keep the
/// cache within its budget (`enforceBudget`, run by the budget keeper), and writers slowed down
/// while modified content alone exceeds it. Only a clean, closed, unpinned file is evicted: it
/// becomes a placeholder, recorded before its cache file goes.
///
/// Uses what holds the tree (`FolderParts`: the tree, the cache files, the outbox that says what
/// is not yet uploaded), the running downloads, and the content activity that wakes the budget
/// keeper.
final class Eviction: Sendable, HoldsTheTree {
    let parts: FolderParts
    /// Wakes the budget keeper when local content may have grown (writes, downloads, pins).
    let contentActivity: ContentActivity
    /// The running downloads (an exclusion stops those below the folder).
    private let hydrations: Hydrations
    /// Modified content exceeds the cache budget: writes wait a little (`enforceBudget`).
    let writesThrottled = Atomic<Bool>(false)
    /// The last budget check left the cache over its budget (open, pinned or modified files
    /// could not be evicted): the last close of a file wakes the budget keeper, so a file read
    /// through a small budget goes once it is closed, not at the keeper's idle check.
    let overBudget = Atomic<Bool>(false)

    init(parts: FolderParts, hydrations: Hydrations, contentActivity: ContentActivity) {
        self.parts = parts
        self.hydrations = hydrations
        self.contentActivity = contentActivity
    }

    /// Frees the local content of every file at or below `ino`; returns each file's outcome by path.
    /// The kernel's cached pages of evicted files are dropped too (a later read downloads). A
    /// download whose bytes have all arrived — it only syncs and records the file now, as right
    /// after a program read the whole file — is waited for first (at most
    /// `finishingDownloadWait`), so the file is evicted rather than kept as being downloaded.
    func evict(below ino: InodeNumber) throws(FSError) -> [(path: String, outcome: EvictOutcome)] {
        waitForFinishingDownloads(below: ino)
        return try live.transact { tree throws(FSError) in
            var files: [Node] = []
            tree.collectFiles(below: try tree.node(ino)) { files.append($0) }
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
    func waitForFinishingDownloads(below ino: InodeNumber) {
        let finishing: [Hydration] = live.transact { tree in
            guard let top = tree.nodes[ino] else { return [] }
            var found: [Hydration] = []
            tree.collectFiles(below: top) { node in
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
    private func evictLocked(_ node: Node, ignoringPins: Bool = false, tree: inout TreeTransaction) -> EvictOutcome {
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
        guard ignoringPins || tree.pinState(of: node) == .none else { return .refused("is pinned") }
        // The rules and ignore files stay here: their rules must be readable whether or not the
        // container can be reached (a folder leaving this device takes them with it).
        guard ignoringPins || !Self.isRulesFile(node) else { return .refused("is a rules or ignore file") }
        // The machine's `evict` of a clean local file: the placeholder state is recorded before
        // the cache file goes (the caller drops the kernel's pages: `invalidateKernelCache`).
        let transition = node.apply(.evict, queued: queued)
        guard !transition.actions.contains(.refuseEviction) else { return .refused("has changes not yet uploaded") }
        if transition.actions.contains(.recordResidency) { tree.recordChange(node) }
        if transition.actions.contains(.dropCacheFile) { cache.remove(id) }
        return .evicted(bytes: size)
    }

    /// Whether `node` is named `.syncfs-rules` or `.syncfs-ignore` (never evicted but with its folder).
    static func isRulesFile(_ node: Node) -> Bool {
        node.name == TreeTransaction.rulesFileName || node.name == TreeTransaction.ignoreFileName
    }

    /// Frees the local content of every file at or below `node`, pinned or not, as the folder
    /// leaves this device (selective sync): the pins stay, for when it comes back. A download
    /// of a file nobody has open (nor is opening to write) stops, and what it fetched is freed:
    /// no content arrives out of sight. Returns the paths of the files kept (open, being
    /// written or downloaded, or not yet uploaded) with why.
    func evictForExclusion(below node: Node, tree: inout TreeTransaction) -> [(path: String, reason: String)] {
        var kept: [(path: String, reason: String)] = []
        var files: [Node] = []
        tree.collectFiles(below: node) { files.append($0) }
        for file in files {
            if file.isPlaceholder && file.hydration != nil && file.openCount == 0 && file.openWriters == 0 {
                hydrations.cancelHydration(of: file, in: &tree)
            }
            switch evictLocked(file, ignoringPins: true, tree: &tree) {
            case .evicted: tree.invalidate(.content(file.ino))
            case .alreadyOnline: break
            case .refused(let reason): kept.append((tree.displayPath(of: file), reason))
            }
        }
        return kept
    }

    // MARK: Budget

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
}
