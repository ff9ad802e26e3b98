import Foundation
import SyncBackend

extension SyncEngine: ChunkSource {
    /// Fetches one chunk for a placeholder's download and verifies it.
    public func plainChunk(_ ref: ChunkRef) throws(ChunkFetchError) -> [UInt8] {
        guard isRunning else { throw .unreachable("the mount is stopping") }
        let container = self.container
        do throws(ContainerProtocolError) {
            let chunk = try Blocking.run { () async throws(ContainerProtocolError) in
                try await container.chunk(ref.hash)
            }
            guard chunk.hash == ref.hash else { throw .corruptChunk(ref.hash) }
            let plain = try ChunkCodec.decode(chunk)
            guard plain.count == Int(ref.length) else { throw .corruptChunk(ref.hash) }
            var totals = ContentTransfer.Totals()
            totals.chunksDownloaded = 1
            totals.bytesDownloaded = Int64(chunk.payload.count)
            addTotals(totals)
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
    func runDownloader() {
        while isRunning {
            if let id = downloads.next() {
                if !fileSystem.hydrateCompletely(id) { downloads.failed(id) }
                continue
            }
            let pinned = fileSystem.pinnedPlaceholders()
            if !pinned.isEmpty && downloads.enqueue(pinned, retrying: false) > 0 { continue }
            downloads.wait(seconds: 30)
        }
    }

    /// `download`: queues files for the background downloader.
    public func requestDownloads(_ ids: [FileID]) { _ = downloads.enqueue(ids, retrying: true) }

    /// Keeps the cache within the budget, checking every second.
    func runBudgetKeeper(_ budget: Int64) {
        while isRunning {
            fileSystem.enforceBudget(budget)
            let deadline = Date().addingTimeInterval(1)
            while isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        }
    }
}

/// The background downloader's queue: file IDs in order, each once; files that failed wait a
/// while before they are offered again.
final class DownloadQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var order: [FileID] = []
    private var queued = Set<FileID>()
    private var failedAt: [FileID: Date] = [:]
    private var stopped = false

    /// Adds the IDs not queued yet (skipping recent failures unless `retrying`); returns how many.
    func enqueue(_ ids: [FileID], retrying: Bool) -> Int {
        condition.lock()
        defer { condition.unlock() }
        var added = 0
        for id in ids where !queued.contains(id) {
            if !retrying, let failed = failedAt[id], Date().timeIntervalSince(failed) < 30 { continue }
            queued.insert(id)
            order.append(id)
            added += 1
        }
        if added > 0 { condition.broadcast() }
        return added
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

    /// Waits until something is queued, `poke`, `stop`, or `seconds` pass.
    func wait(seconds: Double) {
        condition.lock()
        defer { condition.unlock() }
        if order.isEmpty && !stopped { _ = condition.wait(until: Date().addingTimeInterval(seconds)) }
    }

    func poke() {
        condition.lock()
        defer { condition.unlock() }
        condition.broadcast()
    }

    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        condition.broadcast()
    }
}
