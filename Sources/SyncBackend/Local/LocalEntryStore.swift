import SQLiteSupport
import Synchronization

/// The entries of a local container: `container.db` through this process's own connection.
///
/// Invariants:
/// - Every commit runs in one `BEGIN IMMEDIATE` transaction: the rules are checked (`CommitRules`)
///   and the row and the version counter written under SQLite's write lock, so commits of all
///   processes are serialised and versions are handed out without gaps or reuse.
/// - Reads see a committed snapshot (WAL); a statement is always reset after use so no read
///   transaction outlives a call.
/// - The connection is used under a lock, for the length of one synchronous call; callers run
///   those calls off the cooperative pool (`LocalFileIO.offload`).
/// - After an I/O failure the connection is dropped and reopened on the next call, without ever
///   creating the database (a lost database is `unavailable`, not an empty container).
final class LocalEntryStore: Sendable {
    private let layout: LocalLayout
    private let connection: Mutex<SQLiteConnection?>

    /// Opens (creating if `create`) and migrates the database.
    init(layout: LocalLayout, create: Bool) throws {
        self.layout = layout
        self.connection = Mutex(try Self.open(layout.databasePath, create: create))
    }

    static func open(_ path: String, create: Bool) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, create: create)
        try connection.execute("PRAGMA journal_mode = WAL")
        // A commit the container acknowledged must survive a power loss: the client forgets it.
        try connection.execute("PRAGMA synchronous = FULL")
        try LocalContainerSchema.migrations.migrate(connection)
        return connection
    }

    // MARK: Reads

    func entry(_ id: FileID) throws(ContainerProtocolError) -> RemoteEntry? {
        try withConnection { connection in try Self.storedEntry(id, in: connection) }
    }

    /// The latest version handed out.
    func latestVersion() throws(ContainerProtocolError) -> EntryVersion {
        try withConnection { connection in try Self.counter(in: connection) }
    }

    /// Up to `limit + 1` entries with a version after `version`, in version order.
    func entries(after version: EntryVersion, limit: Int) throws(ContainerProtocolError) -> [RemoteEntry] {
        try withConnection { connection in
            let statement = try connection.statement(
                "SELECT \(LocalEntryRow.columns) FROM entries WHERE version > ? ORDER BY version LIMIT ?")
            defer { statement.reset() }
            statement.bind(1, Int64(version))
            statement.bind(2, Int64(limit) + 1)
            var entries: [RemoteEntry] = []
            while try statement.step() { entries.append(try LocalEntryRow.entry(statement)) }
            return entries
        }
    }

    // MARK: Commit

    /// Decides and, if allowed, applies `request` in one transaction. `chunks` answers the
    /// manifest check inside that transaction: a garbage collection deletes chunk files only
    /// while it holds the write lock (`LocalCollector`), so a chunk seen here stays until the
    /// commit is written, and the collection then sees the commit.
    func commit(_ request: CommitRequest, chunks: LocalChunkStore) throws(ContainerProtocolError) -> CommitOutcome {
        try withConnection { connection in
            try connection.transaction { () throws -> CommitOutcome in
                try Self.decideAndApply(request, lookup: Lookup(connection: connection, chunks: chunks))
            }
        }
    }

    /// Decides and applies `requests` in order, in one transaction (as `commit` decides each):
    /// the lookups of a change see the rows the changes before it wrote. A change that throws
    /// rolls the whole transaction back, so nothing of the batch is stored.
    func commit(batch requests: [CommitRequest], chunks: LocalChunkStore) throws(ContainerProtocolError)
        -> [CommitOutcome]
    {
        try withConnection { connection in
            try connection.transaction { () throws -> [CommitOutcome] in
                let outcomes = try Self.decideAndApply(requests, lookup: Lookup(connection: connection, chunks: chunks))
                // Within the transaction: an answer too large to send rolls the batch back.
                try CommitBatch.checkAnswer(outcomes)
                return outcomes
            }
        }
    }

    /// The batch's transaction (`commit(batch:chunks:)`), committed only if every change was:
    /// a refusal rolls it back whole, so nothing is stored and no version used.
    func commit(allOrNothing requests: [CommitRequest], chunks: LocalChunkStore) throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try withConnection { connection in
            do {
                return try connection.transaction { () throws -> AllOrNothingOutcome in
                    let outcomes = try Self.decideAndApply(
                        requests, lookup: Lookup(connection: connection, chunks: chunks))
                    let answer = AllOrNothingOutcome(deciding: outcomes)
                    try CommitBatch.checkAnswer(answer)
                    if !answer.isCommitted { throw RolledBack(answer: answer) }
                    return answer
                }
            } catch let rolledBack as RolledBack {
                return rolledBack.answer
            }
        }
    }

    /// Thrown out of an all-or-nothing transaction to roll it back; carries the refusal.
    private struct RolledBack: Error {
        let answer: AllOrNothingOutcome
    }

    /// `requests` decided and applied in order inside the caller's transaction: the lookups of a
    /// change see the rows the changes before it wrote.
    private static func decideAndApply(_ requests: [CommitRequest], lookup: Lookup) throws -> [CommitOutcome] {
        var outcomes: [CommitOutcome] = []
        outcomes.reserveCapacity(requests.count)
        for request in requests { outcomes.append(try decideAndApply(request, lookup: lookup)) }
        return outcomes
    }

    /// One change inside the caller's transaction: the rules, then the row and the counter.
    private static func decideAndApply(_ request: CommitRequest, lookup: Lookup) throws -> CommitOutcome {
        let connection = lookup.connection
        switch try CommitRules.decide(request, in: lookup) {
        case .refuse(let outcome):
            return outcome
        case .apply(let isDeleted, let state):
            let version = try counter(in: connection) + 1
            let update = try connection.statement("UPDATE counters SET value = ? WHERE name = 'version'")
            update.bind(1, Int64(version))
            try update.run()
            let entry = RemoteEntry(
                id: request.id, version: version, isDeleted: isDeleted, device: request.device, state: state)
            let now = WallClock.nanoseconds()
            // History: the version this commit replaces is kept, in this transaction.
            try LocalEntryRow.keepSuperseded(request.id, replacedAt: now, in: connection)
            try LocalEntryRow.upsert(entry, committedAt: now, in: connection)
            return .committed(entry)
        }
    }

    // MARK: Import

    /// Writes `entries` as they are (IDs, versions, devices, tombstones), in one transaction,
    /// and raises the version counter to the newest of them (`ImportableContainer`).
    func importEntries(_ entries: [RemoteEntry]) throws(ContainerProtocolError) {
        try withConnection { connection in
            try connection.transaction { () throws in
                var newest = try Self.counter(in: connection)
                // The source's commit times are not copied: imported rows count as committed now
                // (so a copied tombstone stays in the trash for the retention period).
                let now = WallClock.nanoseconds()
                for entry in entries {
                    try LocalEntryRow.upsert(entry, committedAt: now, in: connection)
                    newest = max(newest, entry.version)
                }
                let update = try connection.statement("UPDATE counters SET value = ? WHERE name = 'version'")
                update.bind(1, Int64(newest))
                try update.run()
            }
        }
    }

    /// Closes the database now: the last connection's close checkpoints the log and removes it.
    /// A later call opens it again.
    func close() { connection.withLock { $0 = nil } }

    // MARK: Connection

    /// Runs `body` on the connection (reopening it if an earlier I/O failure dropped it), and
    /// maps its failures to protocol errors.
    func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(ContainerProtocolError) -> T {
        try layout.checkReachable()
        return try connection.withLock { (slot: inout SQLiteConnection?) throws(ContainerProtocolError) -> T in
            do {
                let current = try slot ?? Self.open(layout.databasePath, create: false)
                slot = current
                return try body(current)
            } catch let error as SQLiteError {
                if error.isIOError || error.isCannotOpen { slot = nil }
                throw Self.protocolError(error)
            } catch let error as ContainerProtocolError {
                throw error
            } catch {
                throw .storageFailure("container database: \(error)")
            }
        }
    }

    static func protocolError(_ error: SQLiteError) -> ContainerProtocolError {
        if error.isBusy { return .unavailable("the container database stayed locked: \(error)") }
        if error.isCannotOpen { return .unavailable("the container database cannot be opened: \(error)") }
        return .storageFailure("container database: \(error)")
    }

    fileprivate static func storedEntry(_ id: FileID, in connection: SQLiteConnection) throws -> RemoteEntry? {
        let statement = try connection.statement("SELECT \(LocalEntryRow.columns) FROM entries WHERE id = ?")
        defer { statement.reset() }
        statement.bind(1, id.hex)
        return try statement.step() ? try LocalEntryRow.entry(statement) : nil
    }

    static func counter(in connection: SQLiteConnection) throws -> EntryVersion {
        let statement = try connection.statement("SELECT value FROM counters WHERE name = 'version'")
        defer { statement.reset() }
        guard try statement.step() else { throw ContainerProtocolError.storageFailure("the version counter is gone") }
        guard let version = EntryVersion(exactly: statement.int64(0)) else {
            throw ContainerProtocolError.storageFailure("the version counter is damaged")
        }
        return version
    }

    /// The commit rules' view of the database, inside the commit's transaction.
    private struct Lookup: CommitLookup {
        let connection: SQLiteConnection
        let chunks: LocalChunkStore

        func storedEntry(_ id: FileID) throws(ContainerProtocolError) -> RemoteEntry? {
            try mapped { () throws in try LocalEntryStore.storedEntry(id, in: connection) }
        }

        func liveChild(of parent: FileID, named name: [UInt8]) throws(ContainerProtocolError) -> RemoteEntry? {
            try mapped { () throws in
                let statement = try connection.statement(
                    "SELECT \(LocalEntryRow.columns) FROM entries WHERE parent = ? AND name = ? AND deleted = 0")
                defer { statement.reset() }
                statement.bind(1, parent.hex)
                statement.bind(2, bytes: name)
                return try statement.step() ? try LocalEntryRow.entry(statement) : nil
            }
        }

        func hasLiveChildren(_ directory: FileID) throws(ContainerProtocolError) -> Bool {
            try mapped { () throws in
                let statement = try connection.statement(
                    "SELECT 1 FROM entries WHERE parent = ? AND deleted = 0 LIMIT 1")
                defer { statement.reset() }
                statement.bind(1, directory.hex)
                return try statement.step()
            }
        }

        func missingChunks(_ hashes: [ChunkHash]) throws(ContainerProtocolError) -> [ChunkHash] {
            try chunks.missing(hashes)
        }

        private func mapped<T>(_ body: () throws -> T) throws(ContainerProtocolError) -> T {
            do {
                return try body()
            } catch let error as ContainerProtocolError {
                throw error
            } catch let error as SQLiteError {
                throw LocalEntryStore.protocolError(error)
            } catch {
                throw .storageFailure("container database: \(error)")
            }
        }
    }
}
