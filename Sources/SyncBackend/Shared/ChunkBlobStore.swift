/// Where a container keeps chunk bytes, apart from its entries: a local directory
/// (`LocalChunkStore`), an S3-compatible bucket (`SyncS3`). The container's database decides what
/// exists; a blob store only holds bytes (groundwork of the PostgreSQL + S3 server).
///
/// Contracts every implementation keeps:
/// - `put` is idempotent and whole-or-nothing: after it returns, `get` of that hash returns the
///   same encoded chunk; after it throws, a reader sees either nothing or the whole chunk (an
///   interrupted upload never leaves a partial object visible). Putting a chunk that is already
///   stored succeeds without rewriting it.
/// - `get` returns the chunk as stored, or throws `chunkNotFound` if it was never stored (never
///   for a transient failure: that is `unavailable` or `storageFailure`). Stored bytes that do not
///   decode as a chunk of that hash are `corruptChunk`.
/// - `delete` removes a chunk if present (idempotent); only garbage collection calls it.
/// - A transient failure of the store (network, 5xx, throttling) is `unavailable`, never
///   "not found" and never a deletion. Errors never carry credentials.
public protocol ChunkBlobStore: Sendable {
    func put(_ chunk: EncodedChunk) async throws(ContainerProtocolError)
    /// Puts each of `chunks` as `put` does; a failure may leave some of them stored (each whole).
    /// The default puts a few at a time (`ChunkBlobStoreBatch.concurrentPuts`).
    func put(batch chunks: [EncodedChunk]) async throws(ContainerProtocolError)
    func get(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk
    func delete(_ hash: ChunkHash) async throws(ContainerProtocolError)
}

/// The default `put(batch:)`: up to `concurrentPuts` puts in flight (an object store answers
/// each put after a round trip; a few at once hide that latency without flooding it).
public enum ChunkBlobStoreBatch {
    public static let concurrentPuts = 8
}

extension ChunkBlobStore {
    public func put(batch chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, chunk) in chunks.enumerated() {
                    if index >= ChunkBlobStoreBatch.concurrentPuts { _ = try await group.next() }
                    group.addTask { try await self.put(chunk) }
                }
                try await group.waitForAll()
            }
        } catch let error as ContainerProtocolError {
            throw error
        } catch {
            throw .storageFailure("storing chunks: \(error)")
        }
    }
}
