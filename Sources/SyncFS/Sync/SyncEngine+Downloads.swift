import Foundation
import SyncBackend

extension SyncEngine: ChunkSource {
    /// Fetches one chunk for a placeholder's download and verifies it.
    func plainChunk(_ ref: ChunkRef) throws(ChunkFetchError) -> [UInt8] {
        guard isRunning else { throw .unreachable("the mount is stopping") }
        var totals = ContentTransfer.Totals()
        defer { addTotals(totals) }
        do throws(SyncFailure) {
            let plain = try transfer.plainChunk(ref, totals: &totals)
            noteFailure(nil)
            return plain
        } catch {
            if error.isRetryable {
                noteFailure(error.description)
                throw .unreachable(error.description)
            }
            throw .unavailable(error.description)
        }
    }

    /// Downloads in the background, one file at a time: files `download` asked for first, then
    /// placeholders that pins cover (looked for again whenever pins or the tree change, and every
    /// 30 s). A file that cannot be downloaded now (container unreachable) is tried again later.
    ///
    /// The search for pinned placeholders walks the whole tree under its lock, and the follower
    /// wakes this thread after every batch it applies: a mount without pins does not search
    /// again until a pin is set (nothing else makes a node pinned; remote entries never are), or
    /// a first attach of 1,000,000 entries walked the tree ~4,000 times (doc/PERFORMANCE.md,
    /// "A container of 1,000,000 entries").
    func runDownloader() {
        var mayHavePins = true
        while isRunning {
            if let id = downloads.next() {
                if !fileSystem.residency.hydrateCompletely(id) {
                    downloads.failed(id)
                    // Most likely the container is unreachable: do not churn through the queue.
                    downloads.wait(EngineDelay.downloadFailurePause, untilQueued: false)
                }
                continue
            }
            // Taken before the search: a pin set during it is searched for next time.
            if downloads.takePinChange() || mayHavePins {
                let pinned = fileSystem.residency.pinnedPlaceholders()
                mayHavePins = pinned.anyPinned
                if !pinned.files.isEmpty && downloads.enqueue(pinned.files, retrying: false) > 0 { continue }
            }
            downloads.wait(EngineDelay.pinnedPlaceholderScan)
        }
    }

    /// `download`: queues files for the background downloader.
    func requestDownloads(_ ids: [FileID]) { _ = downloads.enqueue(ids, retrying: true, first: true) }

    /// Keeps the cache within the budget: checks at most once a second while content grows
    /// (writes, downloads, unpins wake it through `ContentActivity`), and otherwise sleeps —
    /// an idle mount's keeper wakes once every `idleBudgetCheck`, not every second.
    func runBudgetKeeper(_ budget: Int64) {
        while isRunning {
            _ = fileSystem.residency.enforceBudget(budget)
            sleepWhileRunning(EngineDelay.budgetCheckPause)
            _ = fileSystem.residency.contentActivity.waitForActivity(timeout: Self.idleBudgetCheck)
        }
    }

    /// How often an idle mount's budget keeper looks anyway (content can also grow in ways no
    /// hook sees, e.g. a remote change installed while the keeper slept).
    static let idleBudgetCheck: Duration = .seconds(60)
}

/// The background downloader's queue: file IDs in order, each once; files that failed wait a
/// while before they are offered again.
final class DownloadQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var order: [FileID] = []
    private var queued = Set<FileID>()
    private var failedAt: [FileID: Date] = [:]
    private var stopped = false
    private var pinChanged = false

    /// Adds the IDs not queued yet (skipping recent failures unless `retrying`), at the end or
    /// before everything else (`first`: what a user asked for goes before pins); returns how many.
    func enqueue(_ ids: [FileID], retrying: Bool, first: Bool = false) -> Int {
        condition.lock()
        defer { condition.unlock() }
        var added: [FileID] = []
        for id in ids {
            if !retrying, let failed = failedAt[id], Date().timeIntervalSince(failed) < 30 { continue }
            if queued.contains(id) {
                if first, let index = order.firstIndex(of: id) { order.remove(at: index) } else { continue }
            }
            queued.insert(id)
            added.append(id)
            if retrying { failedAt[id] = nil }
        }
        if first { order.insert(contentsOf: added, at: 0) } else { order.append(contentsOf: added) }
        if !added.isEmpty { condition.broadcast() }
        return added.count
    }

    func next() -> FileID? {
        condition.lock()
        defer { condition.unlock() }
        guard !order.isEmpty else { return nil }
        let id = order.removeFirst()
        queued.remove(id)
        return id
    }

    func failed(_ id: FileID) {
        condition.lock()
        defer { condition.unlock() }
        failedAt[id] = Date()
    }

    /// Waits until `poke`, `stop`, or `timeout` passes (returns at once if something is queued and
    /// `untilQueued`).
    func wait(_ timeout: Duration, untilQueued: Bool = true) {
        condition.lock()
        defer { condition.unlock() }
        if (!untilQueued || order.isEmpty) && !stopped {
            _ = condition.wait(until: Date().addingTimeInterval(timeout / .seconds(1)))
        }
    }

    func poke() {
        condition.lock()
        defer { condition.unlock() }
        condition.broadcast()
    }

    /// A pin was set or moved: wakes the downloader, which searches for pinned placeholders
    /// again (`takePinChange`) even if it found no pin last time.
    func pokeForPins() {
        condition.lock()
        defer { condition.unlock() }
        pinChanged = true
        condition.broadcast()
    }

    /// Whether a pin changed since the last call.
    func takePinChange() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        defer { pinChanged = false }
        return pinChanged
    }

    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        condition.broadcast()
    }
}
