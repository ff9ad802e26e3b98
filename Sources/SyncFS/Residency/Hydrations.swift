import Foundation
import Glibc
import SyncBackend
import Synchronization

/// The downloads of placeholders into their cache files (hydrations): one per file at most,
/// started for the first reader (or writer, pin, `download`) and joined by the others, driven by
/// a thread of its own (`Hydrations+Driver.swift`), cancelled when the content is replaced or
/// discarded, stopped when nobody waits for it any more.
///
/// Uses the tree (each running download hangs on its node: `Node.hydration`), the cache files it
/// fills, the transfer board it reports progress and failures on, and the content activity it
/// notes when a file became local (the budget keeper looks again). `ContentResidency` holds it
/// and asks it for a file's download; the sync engine sets where chunks come from.
final class Hydrations: Sendable, HoldsTheTree {
    let parts: FolderParts
    /// Transfers in progress and transfer failures, per entry (shared with `ContentResidency`).
    let transfers: TransferBoard
    /// Noted when a download made a file local.
    let contentActivity: ContentActivity
    /// Where placeholders' content comes from; nil until the sync engine starts.
    let chunkSource = Mutex<(any ChunkSource)?>(nil)
    /// Download driver threads running (one per file downloading or waiting for a slot).
    let drivers = WorkerGroup()
    /// See `setDownloadExclusions`.
    let downloadExclusions = Mutex<Set<String>>([])
    /// When a download last gave up on an unreachable container (ns; 0: since succeeded).
    let lastUnreachableDownload = Atomic<Int64>(0)
    /// When a download last gave up on a container that did not answer (its call failed only at
    /// its deadline: a hung server; ns; 0: since succeeded).
    let lastUnansweredDownload = Atomic<Int64>(0)

    init(parts: FolderParts, transfers: TransferBoard, contentActivity: ContentActivity) {
        self.parts = parts
        self.transfers = transfers
        self.contentActivity = contentActivity
    }

    /// How long a download keeps retrying an unreachable container while a reader waits, before
    /// the read fails with `ENETDOWN`.
    static let unreachableGiveUp: Double = 3
    /// How long a download that gave up on an unreachable container makes the next ones fail at
    /// once (10 s): the kernel retries a failed readahead with smaller reads, each of which would
    /// otherwise wait `unreachableGiveUp` again.
    static let unreachableRemembered: Duration = .seconds(10)
    /// How long after a download gave up on a container that did not answer (a hung server) the
    /// next ones fail without asking it at all (2 s): enough for the kernel's retry of the failed
    /// read, short enough that a program trying again a little later finds a server that is back.
    static let unansweredJustSeen: Duration = .seconds(2)
    /// At most this many files download at once; more wait for a slot.
    static let downloadSlots = DispatchSemaphore(value: 4)
    /// Chunks fetched at once per download: the container's read of one overlaps the hash and
    /// zlib work of the other.
    static let fetchersPerDownload = 2

    // MARK: Who may download, from where

    /// Process names (as in `/proc/PID/comm`) whose reads never start a download: they get
    /// `EACCES` for bytes not yet downloaded (thumbnailers, indexers; `mount --no-download-for`).
    func setDownloadExclusions(_ names: Set<String>) { downloadExclusions.withLock { $0 = names } }

    /// Whether any process is kept from starting downloads (`setDownloadExclusions`).
    var hasDownloadExclusions: Bool { !downloadExclusions.withLock { $0.isEmpty } }

    /// True if a read of a placeholder by the process `name` must not download.
    func downloadsExcluded(for name: () -> String?) -> Bool {
        let excluded = downloadExclusions.withLock { $0 }
        guard !excluded.isEmpty, let name = name() else { return false }
        return excluded.contains(name)
    }

    /// Sets where placeholders' content comes from (the sync engine, once started).
    func setChunkSource(_ source: (any ChunkSource)?) { chunkSource.withLock { $0 = source } }

    // MARK: Running downloads

    /// The running download of `node`, started if needed; nil if the content is local.
    func hydration(of node: Node) throws(FSError) -> Hydration? {
        try live.transact { tree throws(FSError) in try hydrationLocked(node, tree: &tree) }
    }

    /// See `hydration(of:)`.
    func hydrationLocked(_ node: Node, tree: inout TreeTransaction) throws(FSError) -> Hydration? {
        guard node.isPlaceholder else { return nil }
        if let running = node.hydration { return running }
        guard let manifest = node.retiredManifest ?? tree.bases[node.fileID]?.manifest else { throw .stale }
        let descriptor = try cache.open(node.fileID)
        var info = stat()
        let resumes = fstat(descriptor, &info) == 0 && info.st_blocks > 0
        let hydration = Hydration(manifest: manifest, descriptor: descriptor, resumes: resumes)
        guard ftruncate(descriptor, off_t(hydration.length)) == 0 else {
            let error = FSError.fromErrno()
            close(descriptor)
            throw error
        }
        node.hydration = hydration
        tree.inMotion.insert(node.ino)
        node.apply(.hydrationStarted, queued: outbox.isPending(node.fileID))
        let path = tree.displayPath(of: node)
        let id = node.fileID
        drivers.start("syncfs-download") { [self] worker in
            Self.downloadSlots.wait()
            runHydration(hydration, of: node, id: id, path: path, on: worker)
            Self.downloadSlots.signal()
        }
        return hydration
    }

    /// After the last handle of `node` closed: a download nobody waits for (no reader, no
    /// `download`/pin) stops; what it fetched stays on disk for a later one.
    func stopUnneededHydration(of node: Node, in tree: inout TreeTransaction) {
        guard node.openCount == 0, let running = node.hydration, !running.isWanted, !running.isComplete else { return }
        cancelHydration(of: node, in: &tree)
    }

    /// True if a read of a placeholder by a process that must not download can be served from
    /// what is already on disk.
    func contentPresent(_ handle: OpenFile, offset: Int64, count: Int) -> Bool {
        guard let running = live.transact({ _ in handle.node.hydration }) else { return false }
        return running.isPresent(offset: offset, count: count)
    }

    /// Waits (at most `seconds`) for downloads still running to end (at shutdown).
    func waitForDownloads(seconds: Double) {
        drivers.join(within: .seconds(seconds))
    }

    /// Stops the download of `node` (its content is being replaced or truncated).
    func cancelHydration(of node: Node, in tree: inout TreeTransaction) {
        guard let running = node.hydration else { return }
        running.cancel()
        node.hydration = nil
        node.apply(.hydrationFailed, queued: outbox.isPending(node.fileID))
    }
}
