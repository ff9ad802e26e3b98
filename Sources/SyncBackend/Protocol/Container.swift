/// A container: what a folder syncs with. Small, async, and shaped to be served over HTTP and
/// stored in a database plus an object store; every implementation passes the same conformance
/// suite (`Tests/SyncBackendTests/ContainerConformance*.swift`).
///
/// Contracts every implementation keeps:
/// - **Chunks** are immutable and addressed by `ChunkHash` (SHA-256 of the plain bytes). `putChunk`
///   is idempotent; a chunk is visible to `chunk(_:)` and `missingChunks` only once stored whole
///   (a failed or interrupted put leaves nothing behind).
/// - **Entries** are keyed by `FileID`. The root (`FileID.root`) always exists as a directory
///   (version 0 until its first commit) and cannot be deleted. Every commit is an atomic
///   compare-and-swap against `baseVersion`; it succeeds only if the parent is a live directory,
///   the name is free among the parent's live children, no cycle results, a directory being
///   deleted (or turned into a file or symlink) has no live children, and every chunk of the
///   manifest is stored. These are checked in this order, after the base version; the outcome
///   names the first rule that failed and nothing changed. A request that breaks the rules of
///   `EntryState` and `CommitRequest` themselves (a bad name, a root with a parent, deleting the
///   root or an entry that is not live) throws `invalidRequest`.
/// - **Versions** are container-wide and strictly increasing; each commit takes the next one.
/// - **The change feed** lists, after a cursor, the newest version of every entry committed after
///   it, in commit order (tombstones included). `waitForChanges` returns as soon as there is
///   something after the cursor (a push hint, not a poll loop) or when `timeout` passes.
/// - Errors are `ContainerProtocolError`: retryable ones (`unavailable`, `storageFailure`) say
///   nothing about the data.
public protocol Container: Sendable {
    /// A stable identifier of this container (the same for every client of it).
    var containerID: String { get }

    /// Which of `hashes` the container does not hold (in the order given).
    func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash]

    /// Stores a chunk (idempotent). The container may trust `chunk.hash`; readers verify.
    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError)

    /// The stored chunk, as encoded. Throws `chunkNotFound` if absent.
    func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk

    /// The current version of an entry (a tombstone if deleted), or nil if it never existed.
    func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry?

    /// Commits one change atomically against its base version.
    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome

    /// Commits several changes in one step (`CommitBatch`): each is decided as `commit` decides
    /// it, in order, against the container as the changes before it in the batch left it, and
    /// answered with its own outcome (`outcomes[i]` answers `requests[i]`); a refused change
    /// changes nothing and the ones after it are still decided. The committed changes become
    /// visible together (the feed, `entry`, a waiter) or not at all: a storage failure, or any
    /// request `CommitBatch.check` or `commit` would refuse as malformed (`invalidRequest`), throws
    /// and stores nothing.
    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome]

    /// Commits `requests` together or not at all: each is decided as `commit(batch:)` decides it,
    /// in order, against the container as the changes before it left it; if every one would
    /// commit, all are committed and become visible together (`.committed`, entries in request
    /// order, at consecutive versions); otherwise nothing is stored, no version is used, and the
    /// answer names the first refused change (`.refused`). Malformed batches (`CommitBatch.check`,
    /// a request `commit` would refuse as `invalidRequest`, an answer over
    /// `CommitBatch.maximumAnswerBytes`) throw and store nothing, as for `commit(batch:)`; so does
    /// a storage failure. No default: a container that cannot make it atomic must not pretend to.
    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome

    /// Stores several chunks (each as `putChunk` would; idempotent). At most
    /// `CommitBatch.maximumChunks` chunks and `CommitBatch.maximumChunkBytes` encoded bytes
    /// (else `invalidRequest`, nothing stored). A failure may leave some of them stored, each
    /// whole: chunks are immutable, so that is no partial state.
    func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError)

    /// Up to `limit` changes after `cursor`.
    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch

    /// Returns true as soon as a change after `cursor` exists, false once `timeout` passed without one
    /// (or when the calling task is cancelled).
    func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool

    /// The digest of the live tree as of the end of the feed (`TreeDigest`), with the cursor it
    /// stands for. The default reads the feed from the beginning; a container that can answer
    /// more cheaply (a server: one request) implements it.
    func treeDigest() async throws(ContainerProtocolError) -> TreeDigest
}
