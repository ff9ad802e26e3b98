import SyncBackend

/// A test container that forwards every `Container` call to `base`: conformers add or replace
/// only what they test (canned history, a collection stub, a lying feed, a missing digest).
public protocol ForwardingTestContainer: Container {
    associatedtype Base: Container
    var base: Base { get }
}

extension ForwardingTestContainer {
    public var containerID: String { base.containerID }
    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await base.missingChunks(hashes)
    }
    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await base.putChunk(chunk)
    }
    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await base.chunk(hash)
    }
    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? { try await base.entry(id) }
    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await base.commit(request)
    }
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await base.commit(batch: requests)
    }
    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try await base.commit(allOrNothing: requests)
    }
    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await base.putChunks(chunks)
    }
    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try await base.changes(after: cursor, limit: limit)
    }
    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        try await base.waitForChanges(after: cursor, timeout: timeout)
    }
}
