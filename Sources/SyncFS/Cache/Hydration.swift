import Foundation
import Glibc
import SyncBackend

/// The download of one placeholder into its cache file, shared by every reader of the file.
///
/// One driver (`Hydrations.runHydration`) fetches the chunks in file order, except that a
/// chunk a reader is waiting for goes first, so a read far ahead is served early. A chunk is
/// written at its offset and only then marked present; readers wait only for the chunks covering
/// their range. Invariant: a chunk marked present is in the cache file (written under the lock,
/// so `cancel` — a truncate or replace of the file — never races a write into it).
final class Hydration: @unchecked Sendable {
    let manifest: [ChunkRef]
    /// Where each chunk starts in the file.
    let offsets: [Int64]
    let length: Int64
    /// The cache file, opened read-write by the driver; closed when it ends.
    let descriptor: Int32
    /// The cache file already had bytes (a download interrupted earlier): chunks are verified on
    /// disk before being fetched.
    let resumes: Bool

    private let condition = NSCondition()
    private var present: [Bool]
    private var presentBytes: Int64 = 0
    private var foundOnDiskCount = 0
    private var remaining: Int
    /// Chunks readers wait for, most recent last.
    private var wanted: [Int] = []
    private var nextInOrder = 0
    /// Chunks a fetcher is working on.
    private var fetching = Set<Int>()
    private var failure: FSError?
    private var cancelled = false
    private var finished = false
    /// Callers waiting for the whole file (`download`, pins, an open for writing).
    private var retainers = 0
    /// Readers waiting without a thread (`wait`), until their chunks are present or the download
    /// ends; ended ones (interrupted) are dropped as new ones come.
    private var waits: [ChunkWait] = []

    init(manifest: [ChunkRef], descriptor: Int32, resumes: Bool) {
        self.manifest = manifest
        let layout = ManifestLayout(manifest)
        offsets = layout.offsets
        length = layout.length
        self.descriptor = descriptor
        self.resumes = resumes
        present = Array(repeating: false, count: manifest.count)
        remaining = manifest.count
    }

    /// Bytes downloaded (or found on disk) so far, and the total.
    var progress: (done: Int64, total: Int64) {
        condition.lock()
        defer { condition.unlock() }
        return (presentBytes, length)
    }

    /// Indices of the chunks holding bytes `offset ..< offset + count`.
    func chunks(offset: Int64, count: Int) -> Range<Int> {
        guard count > 0, offset < length, !manifest.isEmpty else { return 0..<0 }
        let end = min(length, offset + Int64(count))
        let first = chunkIndex(containing: offset)
        let last = chunkIndex(containing: end - 1)
        return first..<(last + 1)
    }

    private func chunkIndex(containing position: Int64) -> Int {
        var low = 0
        var high = offsets.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if offsets[middle] <= position { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// Blocks until the chunks holding `offset ..< offset + count` are in the cache file.
    /// Throws the download's failure, or `.stale` if it was cancelled.
    func waitFor(offset: Int64, count: Int) throws(FSError) {
        try waitFor(chunks(offset: offset, count: count))
    }

    private func waitFor(_ range: Range<Int>) throws(FSError) {
        condition.lock()
        defer { condition.unlock() }
        for index in range {
            while !present[index] {
                if let failure { throw failure }
                if cancelled { throw .stale }
                if wanted.last != index {
                    wanted.append(index)
                    condition.broadcast()
                }
                condition.wait()
            }
        }
    }

    /// A reader's wait for the chunks holding `offset ..< offset + count`, ended (`ChunkWait.end`)
    /// once they are in the cache file or the download fails or is cancelled; nil if they are there
    /// already. Throws the download's failure, or `.stale` if it was cancelled. The chunks go to
    /// the front of the download, as for `waitFor`.
    func wait(offset: Int64, count: Int) throws(FSError) -> ChunkWait? {
        let range = chunks(offset: offset, count: count)
        condition.lock()
        defer { condition.unlock() }
        if range.allSatisfy({ present[$0] }) { return nil }
        if let failure { throw failure }
        if cancelled { throw .stale }
        waits.removeAll { $0.hasEnded }
        let wait = ChunkWait(chunks: range)
        waits.append(wait)
        // Most recent last, and the lowest missing chunk of the range taken first.
        for index in range.reversed() where !present[index] { wanted.append(index) }
        condition.broadcast()
        return wait
    }

    /// Takes the waits whose chunks are all present (to be ended outside the lock).
    private func takeSatisfiedWaitsLocked() -> [ChunkWait] {
        guard !waits.isEmpty else { return [] }
        var satisfied: [ChunkWait] = []
        waits.removeAll { wait in
            guard wait.chunks.allSatisfy({ present[$0] }) else { return false }
            satisfied.append(wait)
            return true
        }
        return satisfied
    }

    /// Takes every wait (the download failed or was cancelled).
    private func takeAllWaitsLocked() -> [ChunkWait] {
        defer { waits = [] }
        return waits
    }

    /// The driver's next chunk: a wanted one first, else the next missing in order; nil once
    /// every chunk is present or the download failed or was cancelled.
    ///
    /// Several fetchers may run: a chunk handed out is not handed out again until it is stored,
    /// found on disk, or given back with `abandon`.
    func nextChunk() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard failure == nil, !cancelled, remaining > 0 else { return nil }
        while let index = wanted.popLast() {
            if !present[index] && !fetching.contains(index) {
                fetching.insert(index)
                return index
            }
        }
        while nextInOrder < present.count && present[nextInOrder] { nextInOrder += 1 }
        var index = nextInOrder
        while index < present.count && (present[index] || fetching.contains(index)) { index += 1 }
        guard index < present.count else { return nil }
        fetching.insert(index)
        return index
    }

    /// Gives chunk `index` back (its fetch failed; it may be handed out again).
    func abandon(_ index: Int) {
        condition.lock()
        defer { condition.unlock() }
        fetching.remove(index)
    }

    /// Writes chunk `index` into the cache file and marks it present. False if cancelled or the
    /// write failed (the download then fails).
    func store(_ index: Int, _ bytes: [UInt8]) -> Bool {
        condition.lock()
        if cancelled {
            condition.unlock()
            return false
        }
        if !present[index] {
            let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offsets[index])) }
            guard written == bytes.count else {
                let error = FSError.fromErrno()
                failure = error
                condition.broadcast()
                let failed = takeAllWaitsLocked()
                condition.unlock()
                for wait in failed { wait.end(error) }
                return false
            }
            markPresentLocked(index)
        }
        condition.broadcast()
        let satisfied = takeSatisfiedWaitsLocked()
        condition.unlock()
        for wait in satisfied { wait.end(nil) }
        return true
    }

    /// Marks chunk `index` present without writing (found intact on disk).
    func markFoundOnDisk(_ index: Int) {
        condition.lock()
        if !present[index] {
            markPresentLocked(index)
            foundOnDiskCount += 1
        }
        condition.broadcast()
        let satisfied = takeSatisfiedWaitsLocked()
        condition.unlock()
        for wait in satisfied { wait.end(nil) }
    }

    /// Chunks found in the file already (a resumed download), not fetched: for the log.
    var foundOnDisk: Int {
        condition.lock()
        defer { condition.unlock() }
        return foundOnDiskCount
    }

    private func markPresentLocked(_ index: Int) {
        fetching.remove(index)
        present[index] = true
        presentBytes += manifest[index].length
        remaining -= 1
    }

    /// The download failed or was cancelled (its driver is ending).
    var hasEnded: Bool {
        condition.lock()
        defer { condition.unlock() }
        return failure != nil || cancelled
    }

    var isComplete: Bool {
        condition.lock()
        defer { condition.unlock() }
        return remaining == 0 && failure == nil && !cancelled
    }

    /// True while someone waits for the download (a reader, or a caller of `retain`).
    var isWanted: Bool {
        condition.lock()
        defer { condition.unlock() }
        // A chunk a reader asked for stays in `wanted` until a fetcher next looks, even once it is
        // present: only chunks still missing mean someone waits.
        return retainers > 0 || wanted.contains { !present[$0] } || waits.contains { !$0.hasEnded }
    }

    func retain() {
        condition.lock()
        retainers += 1
        condition.unlock()
    }

    func releaseRetain() {
        condition.lock()
        retainers -= 1
        condition.unlock()
    }

    /// True if the chunks holding `offset ..< offset + count` are in the cache file.
    func isPresent(offset: Int64, count: Int) -> Bool {
        let range = chunks(offset: offset, count: count)
        condition.lock()
        defer { condition.unlock() }
        return range.allSatisfy { present[$0] }
    }

    /// Ends the download with `error` for everyone waiting. True if this call set the failure
    /// (so one fetcher reports it).
    @discardableResult
    func fail(_ error: FSError) -> Bool {
        condition.lock()
        condition.broadcast()
        guard failure == nil, !cancelled else {
            condition.unlock()
            return false
        }
        failure = error
        let failed = takeAllWaitsLocked()
        condition.unlock()
        for wait in failed { wait.end(error) }
        return true
    }

    /// The driver has ended (completed, failed or cancelled).
    func markFinished() {
        condition.lock()
        defer { condition.unlock() }
        finished = true
        condition.broadcast()
    }

    /// Blocks until the driver has ended; throws its failure. A cancelled download returns
    /// normally (the caller looks at the node again).
    /// With `stops`: asked every 200 ms (outside the lock) while waiting; true ends the wait with
    /// EINTR (the caller got a signal that asks it to stop; the download goes on).
    func waitUntilFinished(stops: (() -> Bool)? = nil) throws(FSError) {
        condition.lock()
        defer { condition.unlock() }
        while !finished {
            if let failure { throw failure }
            guard let stops else {
                condition.wait()
                continue
            }
            _ = condition.wait(until: Date().addingTimeInterval(0.2))
            if finished { break }
            condition.unlock()
            let stop = stops()
            condition.lock()
            if stop { throw .io(EINTR) }
        }
        if let failure { throw failure }
    }

    /// Stops the download: the file was truncated or replaced. No chunk is written after this
    /// returns; waiting readers get `.stale`. (Waits end after the lock is dropped: their readers'
    /// replies never run under it.)
    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        let cancelledWaits = takeAllWaitsLocked()
        condition.unlock()
        for wait in cancelledWaits { wait.end(.stale) }
    }
}
