import SyncBackend
import Synchronization

/// A container that forwards to another and injects the failures a real one has: errors, outages,
/// delays, a chunk upload that dies half-way, a commit whose answer is lost, a corrupted download.
///
/// For tests of the layers above (the sync engine, mounts); it counts calls per operation. Each
/// call first counts itself, then waits out any delay, then fails if an outage or a queued
/// failure applies (without forwarding), and only then forwards. Configure it at any time, from
/// any task.
public final class FaultInjectingContainer: Container {
    /// The calls of `Container`, for configuring faults and reading counts.
    public enum Operation: String, CaseIterable, Sendable {
        case missingChunks, putChunk, chunk, entry, commit, changes, waitForChanges
        /// `commit(batch:)`, `commit(allOrNothing:)` and `putChunks` (a batch counts as one call).
        case commitBatch, commitAllOrNothing, putChunks
        /// Both calls of `ContainerHistory` (forwarded when the base keeps history).
        case history
        /// Every call of `ContainerLocks` (forwarded when the base keeps locks).
        case locks
    }

    private struct Faults {
        var failures: [Operation: [ContainerProtocolError]] = [:]
        var outage: (operations: Set<Operation>, error: ContainerProtocolError)?
        var delays: [Operation: Duration] = [:]
        var lostCommitAnswers = 0
        var partialChunkBatches: [Int] = []
        var corruptedChunks = 0
        var calls: [Operation: Int] = [:]
    }

    public let base: any Container
    private let faults = Mutex(Faults())

    public init(_ base: any Container) {
        self.base = base
    }

    public var containerID: String { base.containerID }

    // MARK: Configuring

    /// The next `count` calls of `operation` throw `error` without reaching the base container.
    public func failNext(_ count: Int = 1, _ operation: Operation, with error: ContainerProtocolError) {
        faults.withLock { $0.failures[operation, default: []].append(contentsOf: repeatElement(error, count: count)) }
    }

    /// Every call of `operations` throws `error` until `endOutage()`.
    public func startOutage(
        _ operations: Set<Operation> = Set(Operation.allCases),
        error: ContainerProtocolError = .unavailable("injected outage")
    ) {
        faults.withLock { $0.outage = (operations, error) }
    }

    public func endOutage() {
        faults.withLock { $0.outage = nil }
    }

    /// Delays every call of `operation` by `duration` (nil: no delay).
    public func delay(_ operation: Operation, by duration: Duration?) {
        faults.withLock { $0.delays[operation] = duration }
    }

    /// The next `count` chunk uploads die half-way: they throw `storageFailure` and the chunk is
    /// not stored (a half-written chunk must never become visible).
    public func failNextPutChunksAsPartialWrites(_ count: Int = 1) {
        failNext(count, .putChunk, with: .storageFailure("injected partial write"))
    }

    /// The next `count` commits (single, batch or all or nothing) reach the base container, and then their
    /// answer is lost: the caller gets `unavailable` although the commit may have been applied. A
    /// client recognises its own lost commit when its retry (same base) gets `versionConflict`
    /// whose current entry carries exactly the state and device it sent.
    public func loseNextCommitAnswers(_ count: Int = 1) {
        faults.withLock { $0.lostCommitAnswers += count }
    }

    /// The next `putChunks` call stores only its first `stored` chunks (each whole, as the
    /// contract allows) and then throws `storageFailure`: a store that failed part-way.
    public func failNextPutChunksPartWay(afterStoring stored: Int) {
        faults.withLock { $0.partialChunkBatches.append(max(0, stored)) }
    }

    /// The next `count` chunk downloads return the stored chunk with one payload byte flipped.
    public func corruptNextChunkPayloads(_ count: Int = 1) {
        faults.withLock { $0.corruptedChunks += count }
    }

    /// Clears every fault (not the counts).
    public func clearFaults() {
        faults.withLock { faults in faults = Faults(calls: faults.calls) }
    }

    /// How many calls of `operation` were made, failed ones included.
    public func callCount(_ operation: Operation) -> Int {
        faults.withLock { $0.calls[operation, default: 0] }
    }

    // MARK: Container

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await admit(.missingChunks)
        return try await base.missingChunks(hashes)
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await admit(.putChunk)
        try await base.putChunk(chunk)
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await admit(.chunk)
        var chunk = try await base.chunk(hash)
        let corrupt = faults.withLock { faults in
            guard faults.corruptedChunks > 0 else { return false }
            faults.corruptedChunks -= 1
            return true
        }
        if corrupt {
            if chunk.payload.isEmpty { chunk.payload = [0xFF] } else { chunk.payload[chunk.payload.count / 2] ^= 0xFF }
        }
        return chunk
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await admit(.entry)
        return try await base.entry(id)
    }

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await admit(.commit)
        let outcome = try await base.commit(request)
        if takeLostCommitAnswer() { throw .unavailable("injected: the commit's answer was lost") }
        return outcome
    }

    /// Whether this commit's answer is to be lost (`loseNextCommitAnswers`).
    private func takeLostCommitAnswer() -> Bool {
        faults.withLock { faults in
            guard faults.lostCommitAnswers > 0 else { return false }
            faults.lostCommitAnswers -= 1
            return true
        }
    }

    /// A queued failure (`failNext(_:.commitBatch, with:)`, an outage) throws before the base
    /// is reached: to the caller, a batch the storage failed part-way (nothing of it stored).
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await admit(.commitBatch)
        let outcomes = try await base.commit(batch: requests)
        if takeLostCommitAnswer() { throw .unavailable("injected: the batch's answer was lost") }
        return outcomes
    }

    /// As a batch: a queued failure or an outage throws before the base is reached (nothing
    /// stored), a lost answer after it (everything may be stored).
    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try await admit(.commitAllOrNothing)
        let answer = try await base.commit(allOrNothing: requests)
        if takeLostCommitAnswer() { throw .unavailable("injected: the all-or-nothing commit's answer was lost") }
        return answer
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await admit(.putChunks)
        let stored = faults.withLock { faults -> Int? in
            faults.partialChunkBatches.isEmpty ? nil : faults.partialChunkBatches.removeFirst()
        }
        guard let stored else { return try await base.putChunks(chunks) }
        try CommitBatch.check(chunks)
        try await base.putChunks(Array(chunks.prefix(stored)))
        throw .storageFailure("injected: the chunk store failed after \(min(stored, chunks.count)) chunks")
    }

    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try await admit(.changes)
        return try await base.changes(after: cursor, limit: limit)
    }

    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        try await admit(.waitForChanges)
        return try await base.waitForChanges(after: cursor, timeout: timeout)
    }

    /// Counts the call, delays it, and throws the fault that applies to it, if any.
    func admit(_ operation: Operation) async throws(ContainerProtocolError) {
        let delay = faults.withLock { faults in
            faults.calls[operation, default: 0] += 1
            return faults.delays[operation]
        }
        if let delay { try? await Task.sleep(for: delay) }
        let failure = faults.withLock { faults -> ContainerProtocolError? in
            if let outage = faults.outage, outage.operations.contains(operation) { return outage.error }
            guard var queued = faults.failures[operation], !queued.isEmpty else { return nil }
            let error = queued.removeFirst()
            faults.failures[operation] = queued
            return error
        }
        if let failure { throw failure }
    }
}
