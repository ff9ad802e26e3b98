import SyncBackend

/// The container as the sync engine's threads call it: every operation synchronous, every
/// failure a `SyncFailure.container` carrying the container's own error unchanged.
///
/// This is the one place where the engine's threads (uploader, follower, downloader) cross into
/// the async `Container` protocol (through `Blocking.run`, never on the cooperative pool) and the
/// one error mapping on the way back: what is transient (`unavailable`, `busy`,
/// `storageFailure`: `isRetryable`), what the container refused (`invalidRequest`) and what
/// broke the protocol (`chunkNotFound`, `corruptChunk`) stays exactly what the container said,
/// so callers decide on `SyncFailure.isRetryable`, `waitsForContainer` and `isWaiting` as before.
/// Never call it from a Swift concurrency task (it blocks its thread until the call ends).
struct BlockingContainer: Sendable {
    /// The container every call goes to (in the engine: validated, reachability-watching).
    let base: any Container
    /// The mount's bandwidth limits on chunk bytes (nil: none); a transfer waits for them before
    /// it starts and is counted without waiting (`BandwidthLimiter`).
    var limiter: BandwidthLimiter? = nil

    /// `Container.missingChunks`: which of `hashes` the container lacks.
    func missingChunks(_ hashes: [ChunkHash]) throws(SyncFailure) -> [ChunkHash] {
        try call { container throws(ContainerProtocolError) in try await container.missingChunks(hashes) }
    }

    /// `Container.putChunk`: stores one encoded chunk.
    func putChunk(_ chunk: EncodedChunk) throws(SyncFailure) {
        try limiter?.beforeUpload(chunk.payload.count)
        try call { container throws(ContainerProtocolError) in try await container.putChunk(chunk) }
    }

    /// `Container.putChunks`: stores several encoded chunks (within `CommitBatch`'s limits).
    func putChunks(_ chunks: [EncodedChunk]) throws(SyncFailure) {
        try limiter?.beforeUpload(chunks.reduce(0) { $0 + $1.payload.count })
        try call { container throws(ContainerProtocolError) in try await container.putChunks(chunks) }
    }

    /// `Container.chunk`: the stored chunk with this hash (not verified here: see
    /// `ContentTransfer.plainChunk`). A wait for the download limit ends (`busy`) once
    /// `cancelled` returns true.
    func chunk(_ hash: ChunkHash, cancelled: () -> Bool = { false }) throws(SyncFailure) -> EncodedChunk {
        try limiter?.beforeDownload(cancelled: cancelled)
        let chunk = try call { container throws(ContainerProtocolError) in try await container.chunk(hash) }
        limiter?.afterDownload(chunk.payload.count)
        return chunk
    }

    /// `Container.entry`: the current entry of `id`, nil if the container has none.
    func entry(_ id: FileID) throws(SyncFailure) -> RemoteEntry? {
        try call { container throws(ContainerProtocolError) in try await container.entry(id) }
    }

    /// `Container.commit`: one entry change against its base version.
    func commit(_ request: CommitRequest) throws(SyncFailure) -> CommitOutcome {
        try call { container throws(ContainerProtocolError) in try await container.commit(request) }
    }

    /// `Container.commit(batch:)`: several changes in one step, each answered by its own outcome.
    func commit(batch requests: [CommitRequest]) throws(SyncFailure) -> [CommitOutcome] {
        try call { container throws(ContainerProtocolError) in try await container.commit(batch: requests) }
    }

    /// `Container.changes`: the next page of the change feed after `cursor`.
    func changes(after cursor: FeedCursor, limit: Int) throws(SyncFailure) -> ChangeBatch {
        try call { container throws(ContainerProtocolError) in try await container.changes(after: cursor, limit: limit)
        }
    }

    /// `Container.waitForChanges`: waits up to `timeout` for the feed to move past `cursor`;
    /// `handle` lets another thread end the wait (`SyncEngine.stop`, a server switch, `verify`).
    @discardableResult
    func waitForChanges(
        after cursor: FeedCursor, timeout: Duration, cancellable handle: CancelHandle? = nil
    ) throws(SyncFailure) -> Bool {
        try call(cancellable: handle) { container throws(ContainerProtocolError) in
            try await container.waitForChanges(after: cursor, timeout: timeout)
        }
    }

    /// `Container.treeDigest`: the digest of the container's live tree and its cursor.
    func treeDigest() throws(SyncFailure) -> TreeDigest {
        try call { container throws(ContainerProtocolError) in try await container.treeDigest() }
    }

    /// Runs one container call from this thread and maps its error (the only mapping).
    private func call<T: Sendable>(
        cancellable handle: CancelHandle? = nil,
        _ body: @escaping @Sendable (any Container) async throws(ContainerProtocolError) -> T
    ) throws(SyncFailure) -> T {
        let base = self.base
        do throws(ContainerProtocolError) {
            return try Blocking.run(cancellable: handle) { () async throws(ContainerProtocolError) in
                try await body(base)
            }
        } catch {
            throw .container(error)
        }
    }
}
