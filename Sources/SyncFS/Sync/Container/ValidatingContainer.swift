import SyncBackend

/// Forwards every call to a container and checks every entry it answers with
/// (`RemoteEntryValidation`) before the engine sees it: the place where remote entries enter.
///
/// - A failing entry in a change batch is dropped from the batch and reported (`refused`); the
///   batch's cursor stays, so the rest of the feed goes on and the entry is not asked for again.
/// - A failing entry read by ID is reported and answered as absent (`nil`). Every caller treats
///   an absent entry as "nothing to apply now" (a deferred change waits, a missing parent keeps
///   its child waiting), never as a deletion.
/// - A commit answer that carries a failing entry becomes `unavailable`: the upload stays queued
///   and is retried with backoff, its error visible in `status`. In a batch's answer only that
///   change's outcome is set aside (`commit(batch:)`); an all-or-nothing answer is checked
///   whole (`commit(allOrNothing:)`).
///
/// Core checks each entry again where it is applied (`RemoteChanges.plan`).
struct ValidatingContainer: Container {
    let base: any Container
    /// Called for each refused entry with the reason.
    let refused: @Sendable (RemoteEntry, String) -> Void
    /// Called for each entry that passed (a later valid version clears an earlier refusal).
    let accepted: @Sendable (RemoteEntry) -> Void

    var containerID: String { base.containerID }

    func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await base.missingChunks(hashes)
    }

    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await base.putChunk(chunk)
    }

    func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await base.putChunks(chunks)
    }

    func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await base.chunk(hash)
    }

    func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        guard let entry = try await base.entry(id) else { return nil }
        guard entry.id == id else {
            refused(entry, "the container answered a read of \(id) with entry \(entry.id)")
            return nil
        }
        return passes(entry) ? entry : nil
    }

    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try check(try await base.commit(request), of: request)
    }

    /// Each outcome is checked against its own request as a single commit's is. One that fails
    /// the check is answered as `versionConflict(current: nil)` — "not committed as asked" —
    /// so the caller sends that change again alone, where the failure shows as a single
    /// commit's would, while the batch's other outcomes are used: one bad entry from another
    /// device must not hold back the rest. An answer with another count of outcomes than
    /// requests becomes `unavailable` (nothing of it is used).
    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        let outcomes = try await base.commit(batch: requests)
        guard outcomes.count == requests.count else {
            throw .unavailable(
                "the container answered a batch of \(requests.count) changes with \(outcomes.count) outcomes")
        }
        return zip(requests, outcomes).map { request, outcome in
            do throws(ContainerProtocolError) {
                return try check(outcome, of: request)
            } catch {
                return .versionConflict(current: nil)
            }
        }
    }

    /// Checked whole, as a single commit's answer is: `committed` must carry one entry per
    /// request, each its request's and passing; `refused` must name a change of the call with a
    /// refusal that answers it (checked as a single commit's). Any failure makes the whole answer
    /// `unavailable`: the changes may all be committed, and none can be set aside alone.
    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        let answer = try await base.commit(allOrNothing: requests)
        switch answer {
        case .committed(let entries):
            guard entries.count == requests.count else {
                throw .unavailable(
                    "the container committed \(entries.count) entries for \(requests.count) changes all or nothing")
            }
            for (request, entry) in zip(requests, entries) { _ = try check(.committed(entry), of: request) }
        case .refused(let index, let outcome):
            guard requests.indices.contains(index), !Self.isCommitted(outcome) else {
                throw .unavailable(
                    "the container refused \(requests.count) changes all or nothing naming change \(index) "
                        + "with \(outcome)")
            }
            _ = try check(outcome, of: requests[index])
        }
        return answer
    }

    private static func isCommitted(_ outcome: CommitOutcome) -> Bool {
        if case .committed = outcome { return true }
        return false
    }

    /// `outcome` if the entry it carries passes and is the requested entry where it must be (a
    /// commit's result, a conflict's current version), else `unavailable`.
    private func check(_ outcome: CommitOutcome, of request: CommitRequest) throws(ContainerProtocolError)
        -> CommitOutcome
    {
        let carried: RemoteEntry?
        switch outcome {
        case .committed(let entry): carried = entry
        case .versionConflict(let current): carried = current
        case .nameTaken(let holder): carried = holder
        case .parentMissing, .directoryNotEmpty, .wouldCreateCycle, .chunksMissing: carried = nil
        }
        if case .committed(let entry) = outcome, entry.id != request.id {
            throw .unavailable("the container answered the commit of \(request.id) with entry \(entry.id)")
        }
        if case .versionConflict(let current?) = outcome, current.id != request.id {
            throw .unavailable("the container answered the commit of \(request.id) with entry \(current.id)")
        }
        if let carried, !passes(carried) {
            throw .unavailable("the container answered the commit of \(request.id) with an entry this mount refuses")
        }
        return outcome
    }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        var batch = try await base.changes(after: cursor, limit: limit)
        batch.entries = batch.entries.filter(passes)
        return batch
    }

    func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool {
        try await base.waitForChanges(after: cursor, timeout: timeout)
    }

    /// Not an entry: passed on as it came (`HTTPContainer` checks its form).
    func treeDigest() async throws(ContainerProtocolError) -> TreeDigest {
        try await base.treeDigest()
    }

    private func passes(_ entry: RemoteEntry) -> Bool {
        if let problem = RemoteEntryValidation.problem(with: entry) {
            refused(entry, problem)
            return false
        }
        accepted(entry)
        return true
    }
}
