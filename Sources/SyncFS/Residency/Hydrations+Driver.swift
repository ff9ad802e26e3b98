import Foundation
import Glibc
import SyncBackend

/// The driver of one download and its fetchers: every chunk fetched (or found on disk from an
/// earlier, unfinished download), the file synced and the node marked local; on failure, readers
/// get the error and the node stays a placeholder. An unreachable container is retried for
/// `unreachableGiveUp` seconds, then the download fails with `containerUnreachable`.
extension Hydrations {
    /// The driver of one download: fetches (or finds on disk) every chunk, syncs the file, and
    /// marks the node local; on failure, readers get the error and the node stays a placeholder.
    func runHydration(_ hydration: Hydration, of node: Node, id: FileID, path: String, on worker: Worker) {
        let started = Clock.nowNanoseconds()
        transfers.started(id, direction: .download, total: hydration.length)
        let helpers = (1..<Self.fetchersPerDownload).map { _ in
            Worker.start("syncfs-download") { [self] helper in
                fetchChunks(of: hydration, id: id, path: path, on: helper)
            }
        }
        fetchChunks(of: hydration, id: id, path: path, on: worker)
        for helper in helpers { helper.join() }
        var complete = hydration.isComplete
        if complete && Glibc.fsync(hydration.descriptor) != 0 {
            hydration.fail(.fromErrno())
            complete = false
        }
        close(hydration.descriptor)
        live.transact { tree in
            guard node.hydration === hydration else { return }
            node.hydration = nil
            let queued = outbox.isPending(node.fileID)
            node.apply(complete ? .hydrationFinished : .hydrationFailed, queued: queued)
            if complete {
                // Every chunk was checked on its way in (an evicted copy marked at mount is done).
                node.contentUnverified.store(false, ordering: .releasing)
                node.verification = nil
                node.retiredManifest = nil
                node.lastUsed = Clock.nowNanoseconds()
                if !node.isUnlinked {
                    tree.recordChange(node)
                    tree.noteChange(.downloaded, node, origin: nil)
                }
            }
        }
        if complete { transfers.finished(id) } else { transfers.ended(id) }
        if complete { contentActivity.note() }
        if complete { logDownload(hydration, id: id, started: started) }
        hydration.markFinished()
    }

    /// A chunk arrived: downloads that were failing work again (logged once).
    private func noteDownloadsAnswered(afterFailing: Bool) {
        if afterFailing || lastUnreachableDownload.load(ordering: .relaxed) != 0 {
            logDownloadsWorkAgain()
        }
        lastUnreachableDownload.store(0, ordering: .relaxed)
        lastUnansweredDownload.store(0, ordering: .relaxed)
    }

    /// The container did not answer for a chunk of `hydration`: gives up (true) if it was known
    /// unreachable a moment ago (the kernel retrying a failed readahead with a smaller read) or
    /// has failed since `failingSince` for `unreachableGiveUp`. Not a failure of this file: the
    /// mount is offline (`status` says so once) and the file stays a placeholder, readable again
    /// once it is back.
    private func gaveUpUnreachable(
        _ hydration: Hydration, id: FileID, path: String, reason: String, failingSince: Date, attemptStarted: Date
    ) -> Bool {
        let knownDown =
            Clock.nowNanoseconds() - lastUnreachableDownload.load(ordering: .relaxed)
            < Self.unreachableRemembered.inNanoseconds
        guard knownDown || Date().timeIntervalSince(failingSince) >= Self.unreachableGiveUp else { return false }
        lastUnreachableDownload.store(Clock.nowNanoseconds(), ordering: .relaxed)
        if Date().timeIntervalSince(attemptStarted) >= 1 {
            lastUnansweredDownload.store(Clock.nowNanoseconds(), ordering: .relaxed)
        }
        // Logged before readers are woken with the error (they may look for it).
        if !hydration.hasEnded { logDownloadUnreachable(path, id: id, reason: reason) }
        transfers.ended(id)
        hydration.fail(.containerUnreachable)
        return true
    }

    /// One fetcher of a download: takes chunks until none is left, the download failed or was
    /// cancelled. An unreachable container is retried for `unreachableGiveUp` seconds.
    private func fetchChunks(of hydration: Hydration, id: FileID, path: String, on worker: Worker) {
        var failingSince: Date?
        var pause = 0.05
        while let index = hydration.nextChunk() {
            let ref = hydration.manifest[index]
            if hydration.resumes && chunkOnDisk(ref, at: hydration.offsets[index], in: hydration.descriptor) {
                hydration.markFoundOnDisk(index)
                continue
            }
            guard let source = chunkSource.withLock({ $0 }) else {
                hydration.fail(.containerUnreachable)
                return
            }
            // A server that did not answer a moment ago (the kernel retries a failed read at
            // once, with a smaller one): fail without asking again, which would cost a whole
            // deadline. (A server that refuses is asked again: that costs nothing.)
            if failingSince == nil
                && Clock.nowNanoseconds() - lastUnansweredDownload.load(ordering: .relaxed)
                    < Self.unansweredJustSeen.inNanoseconds
            {
                transfers.ended(id)
                hydration.fail(.containerUnreachable)
                return
            }
            // A server that does not answer fails a call only at its deadline: the time to give
            // up counts from when the failing call began, not from its end.
            let attemptStarted = Date()
            do throws(ChunkFetchError) {
                let bytes = try source.plainChunk(ref, cancelled: { hydration.hasEnded })
                noteDownloadsAnswered(afterFailing: failingSince != nil)
                failingSince = nil
                pause = 0.05
                guard hydration.store(index, bytes) else { return }
                transfers.progressed(id, done: hydration.progress.done)
            } catch {
                hydration.abandon(index)
                // Cancelled or failed meanwhile (a wait for the bandwidth limit ended on it).
                if hydration.hasEnded { return }
                switch error {
                case .unreachable(let reason):
                    let since = failingSince ?? attemptStarted
                    failingSince = since
                    if gaveUpUnreachable(
                        hydration, id: id, path: path, reason: reason, failingSince: since,
                        attemptStarted: attemptStarted)
                    {
                        return
                    }
                    worker.sleep(for: .seconds(pause))
                    pause = min(pause * 2, 0.5)
                case .unavailable(let reason):
                    if !hydration.hasEnded { logger.error("cannot download \(path): \(reason)") }
                    transfers.failed(id, "download: \(reason)")
                    hydration.fail(.contentUnavailable)
                    return
                }
            }
        }
    }

    /// True if the chunk `ref` at `offset` is already in the file (a resumed download).
    private func chunkOnDisk(_ ref: ChunkRef, at offset: Int64, in descriptor: Int32) -> Bool {
        // A hole where the chunk starts: never written.
        guard Glibc.lseek(descriptor, off_t(offset), SeekWhence.data) == off_t(offset) else { return false }
        var bytes = [UInt8](repeating: 0, count: Int(ref.length))
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        return count == Int(ref.length) && bytes.withUnsafeBytes { ChunkCodec.hash($0) } == ref.hash
    }
}
