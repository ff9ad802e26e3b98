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
    func get(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk
    func delete(_ hash: ChunkHash) async throws(ContainerProtocolError)
}
