import Logging
import PostgresNIO
import SyncBackend

/// One commit of a `PostgresContainer`: optimistic, checked under the container's lock inside
/// PostgreSQL, with a locked transaction as the fallback.
///
/// 1. One statement reads everything `CommitRules` may ask (`syncfs_commit_lookup`) and its
///    fingerprint, as one consistent snapshot; the shared rules decide on it. A refusal is
///    answered at once: it is true of a committed state of the container.
/// 2. An `.apply` is one more statement, `syncfs_commit_apply`, which locks the container row,
///    recomputes the fingerprint and writes only if the answers are the same — so the write is
///    exactly the one the rules would have decided under the lock — at the counter + 1, with
///    `NOTIFY syncfs_changes` (delivered when that statement's transaction commits). Commits of
///    one container still run one after another, but the lock is held for the work inside
///    PostgreSQL only, not for round trips to this process.
/// 3. When the answers changed meanwhile (another commit touched the entry, its ancestors, the
///    name, its children or the chunks), the commit decides again; after `optimisticAttempts`
///    it takes the lock for the whole decision instead (`lockedCommit`): `BEGIN`, `SELECT … FOR
///    UPDATE`, the lookup, the write, `COMMIT` — always making progress.
///
/// Why the row lock rather than `SERIALIZABLE`: every commit of a container takes that one row's
/// lock, so commits of all processes run one after another and the next version is the counter
/// + 1, without gaps or reuse; `SERIALIZABLE` would report collisions as serialization failures
/// to retry. Commits of different containers never wait for each other. The lock is a statement
/// of its own in `lockedCommit`: under READ COMMITTED a statement sees the data of its start, so
/// lookups made by the statement that waited for the lock would miss the commit it waited for
/// (`syncfs_commit_apply` is PL/pgSQL, which takes a new snapshot for each statement).
enum PostgresCommit {
    /// Optimistic tries before the locked transaction.
    static let optimisticAttempts = 3

    /// Commits `request` to container `rowID`; `attempts` optimistic tries (0: the locked
    /// transaction at once — tests use it to check that path alone).
    static func commit(
        _ request: CommitRequest, container rowID: Int64, client: PostgresClient, logger: Logger,
        attempts: Int = optimisticAttempts
    ) async throws -> CommitOutcome {
        let key = CommitLookupKey(request, container: rowID)
        for _ in 0..<attempts {
            let rows = try await client.query(key.lookupWithFingerprint, logger: logger)
            var fingerprint: String?
            let snapshot = try await CommitSnapshot.read(rows, for: key) { cells in
                fingerprint = try cells[16].decode(String?.self)
            }
            switch try CommitRules.decide(request, in: snapshot) {
            case .refuse(let outcome):
                return outcome
            case .apply(let isDeleted, let state):
                let applied = try await client.query(
                    key.apply(fingerprint: fingerprint, isDeleted: isDeleted, device: request.device, state: state),
                    logger: logger)
                var version: Int64??
                for try await value in applied.decode(Int64?.self) { version = value }
                guard let version, let version else {
                    throw ContainerProtocolError.unavailable("the container is no longer in the database")
                }
                if version > 0 {
                    return .committed(
                        RemoteEntry(
                            id: request.id, version: EntryVersion(version), isDeleted: isDeleted,
                            device: request.device, state: state))
                }
            }
        }
        return try await client.withTransaction(logger: logger) { connection in
            try await lockedCommit(request, key: key, on: connection, logger: logger)
        }
    }

    /// The commit decided and written under the container's lock, in the transaction of
    /// `connection`.
    static func lockedCommit(
        _ request: CommitRequest, key: CommitLookupKey, on connection: PostgresConnection, logger: Logger
    ) async throws -> CommitOutcome {
        let locked = try await connection.query(
            "SELECT version FROM syncfs_containers WHERE id = \(key.container) FOR UPDATE", logger: logger)
        var counter: Int64?
        for try await version in locked.decode(Int64.self) { counter = version }
        guard let counter else {
            throw ContainerProtocolError.unavailable("the container is no longer in the database")
        }
        let rows = try await connection.query(key.lookup, logger: logger)
        let snapshot = try await CommitSnapshot.read(rows, for: key) { _ in }
        switch try CommitRules.decide(request, in: snapshot) {
        case .refuse(let outcome):
            return outcome
        case .apply(let isDeleted, let state):
            let entry = RemoteEntry(
                id: request.id, version: EntryVersion(counter + 1), isDeleted: isDeleted, device: request.device,
                state: state)
            // Drain the answer: the statement has run once its one row has come back.
            for try await _ in try await connection.query(
                PostgresEntryRow.apply(entry, container: key.container), logger: logger)
            {}
            return .committed(entry)
        }
    }
}
