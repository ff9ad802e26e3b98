import PostgresNIO
import SyncBackend

/// One container of a `PostgresStore`: its entries, version counter and change feed are rows in
/// PostgreSQL, its chunk bytes are in the store's `ChunkBlobStore`, and the `syncfs_chunks` table
/// says which chunks it holds (`missingChunks` never lists the blob store).
///
/// - Commits: see `PostgresCommit` (a lookup, the shared `CommitRules`, and a write checked
///   under the container row's lock inside PostgreSQL; `NOTIFY` at commit).
/// - Chunks: see `PostgresChunkClaim` (`putChunk` claims a row, stores the blob, then marks the
///   row live, so a chunk a commit can reference is always readable; garbage collection may run
///   at any time). `chunk(_:)` reads the live row (absent: `chunkNotFound`), then the blob; a
///   blob missing behind a live row is a `storageFailure` (retryable), never "not found".
/// - History and collection: `PostgresHistory`, `PostgresCollection`.
/// - Waiting: `waitForChanges` re-reads the container's version whenever the store's listener
///   hears a `NOTIFY` for it, and at least every `recheckInterval` as a backstop.
/// - Every PostgreSQL or blob failure that may pass is `unavailable`; nothing is ever deleted
///   because of one.
public final class PostgresContainer: Container {
    let store: PostgresStore
    /// The container's row in `syncfs_containers`.
    let rowID: Int64
    public let containerID: String
    let notifier: ChangeNotifier

    init(store: PostgresStore, rowID: Int64, containerID: String) {
        self.store = store
        self.rowID = rowID
        self.containerID = containerID
        self.notifier = store.notifier(for: rowID)
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        let stored = try await store.run("read entry \(id)") { [rowID] client in
            try await PostgresEntryRow.entries(
                try await client.query(
                    """
                    SELECT \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                    WHERE container = \(rowID) AND file_id = \(id.hex)
                    """)
            ).first
        }
        return stored ?? (id == .root ? CommitRules.implicitRoot : nil)
    }

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try RequestValidation.check(request)
        return try await store.run("commit entry \(request.id)") { [rowID, store] client in
            try await PostgresCommit.commit(request, container: rowID, client: client, logger: store.options.logger)
        }
    }

    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let limit = try FeedPosition.pageSize(limit)
        let after = try FeedPosition.version(of: cursor)
        let fetched = try await store.run("read the change feed") { [rowID] client in
            try await PostgresEntryRow.entries(
                try await client.query(
                    """
                    SELECT \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                    WHERE container = \(rowID) AND version > \(Int64(after)) ORDER BY version LIMIT \(limit + 1)
                    """))
        }
        // Only an empty page can be past the newest version (a cursor never given out).
        if fetched.isEmpty, after > 0 { try FeedPosition.checkGivenOut(after, newest: try await latestVersion()) }
        return FeedPosition.batch(fetched, limit: limit, after: cursor)
    }

    /// The newest version of the container (its counter), read now.
    func latestVersion() async throws(ContainerProtocolError) -> EntryVersion {
        try await store.readVersion(rowID)
    }

    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        let after = try FeedPosition.version(of: cursor)
        let deadline = ChangeNotifier.deadline(after: timeout)
        while true {
            // The generation is read before the version: a commit the read misses moves it.
            let seen = notifier.generation
            var latest: EntryVersion
            do {
                latest = try await store.sharedVersion(rowID, generation: seen)
                if latest < after {
                    // Perhaps only the shared read is behind (a commit through another process,
                    // not yet notified): refuse the cursor only if the database says so too.
                    latest = try await latestVersion()
                }
            } catch {
                // A cancelled wait ends with false (the contract), not with the cancelled read's error.
                if Task.isCancelled { return false }
                throw error
            }
            if latest > after { return true }
            try FeedPosition.checkGivenOut(after, newest: latest)
            let now = ContinuousClock.now
            if now >= deadline || Task.isCancelled { return false }
            await notifier.wait(since: seen, timeout: min(deadline - now, store.options.recheckInterval))
        }
    }
}
