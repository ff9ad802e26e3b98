import Foundation
import SyncBackend

/// Brings content from the container: each chunk a placeholder's read asks for
/// (`ChunkSource`), and whole files in the background, one at a time, on the downloader thread.
final class Downloader: ChunkSource, Sendable {
    private let fileSystem: SyncFileSystem
    private let transfer: ContentTransfer
    private let progress: EngineProgress
    private let run: EngineRun
    /// While all transfers are paused (`pause --all`) nothing is downloaded in the background.
    private let pause: SyncPause
    /// Files for the background downloader (the follower pokes it after each batch).
    let queue = DownloadQueue()

    init(
        fileSystem: SyncFileSystem, transfer: ContentTransfer, progress: EngineProgress, run: EngineRun,
        pause: SyncPause
    ) {
        self.fileSystem = fileSystem
        self.transfer = transfer
        self.progress = progress
        self.run = run
        self.pause = pause
    }

    /// Fetches one chunk for a placeholder's download and verifies it.
    func plainChunk(_ ref: ChunkRef, cancelled: () -> Bool) throws(ChunkFetchError) -> [UInt8] {
        guard run.isRunning else { throw .unreachable("the mount is stopping") }
        var totals = ContentTransfer.Totals()
        defer { progress.add(totals) }
        do throws(SyncFailure) {
            let plain = try transfer.plainChunk(ref, totals: &totals, cancelled: cancelled)
            progress.noteFailure(nil)
            return plain
        } catch {
            // Not the container's failure: nobody wants the chunk any more.
            if cancelled() { throw .unavailable("cancelled") }
            if error.isRetryable {
                progress.noteFailure(error.description)
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
    func runDownloads() {
        var mayHavePins = true
        while run.isRunning {
            if pause.waitWhilePaused(.all) { continue }
            if let id = queue.next() {
                if !fileSystem.residency.hydrateCompletely(id) {
                    queue.failed(id)
                    // Most likely the container is unreachable: do not churn through the queue.
                    queue.wait(EngineDelay.downloadFailurePause, untilQueued: false)
                }
                continue
            }
            // Taken before the search: a pin set during it is searched for next time.
            if queue.takePinChange() || mayHavePins {
                let pinned = fileSystem.residency.pinnedPlaceholders()
                mayHavePins = pinned.anyPinned
                if !pinned.files.isEmpty && queue.enqueue(pinned.files, retrying: false) > 0 { continue }
            }
            queue.wait(EngineDelay.pinnedPlaceholderScan)
        }
    }

    /// `download`: queues files for the background downloader.
    func request(_ ids: [FileID]) { _ = queue.enqueue(ids, retrying: true, first: true) }

    /// Ends the downloader's wait at `stop`.
    func stop() { queue.stop() }
}
