import SyncBackend

/// Forwards every call to a container and calls `answered` after each one that succeeded (a
/// refused commit is an answer too). The sync engine wraps its container in one, so the outbox
/// learns at once that the container is reachable again (`Outbox.containerAnswered`): changes
/// that failed only because it was away are retried within moments, not after their backoff.
/// Failed calls are passed through untouched.
struct AnsweringContainer: Container {
    let base: any Container
    let answered: @Sendable () -> Void

    init(_ base: any Container, answered: @escaping @Sendable () -> Void) {
        self.base = base
        self.answered = answered
    }

    var containerID: String { base.containerID }

    func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        let missing = try await base.missingChunks(hashes)
        answered()
        return missing
    }

    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await base.putChunk(chunk)
        answered()
    }

    func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await base.putChunks(chunks)
        answered()
    }

    func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        let chunk = try await base.chunk(hash)
        answered()
        return chunk
    }

    func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        let entry = try await base.entry(id)
        answered()
        return entry
    }

    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        let outcome = try await base.commit(request)
        answered()
        return outcome
    }

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        let outcomes = try await base.commit(batch: requests)
        answered()
        return outcomes
    }

    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        let answer = try await base.commit(allOrNothing: requests)
        answered()
        return answer
    }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let batch = try await base.changes(after: cursor, limit: limit)
        answered()
        return batch
    }

    func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool {
        let changed = try await base.waitForChanges(after: cursor, timeout: timeout)
        answered()
        return changed
    }

    func treeDigest() async throws(ContainerProtocolError) -> TreeDigest {
        let digest = try await base.treeDigest()
        answered()
        return digest
    }
}
