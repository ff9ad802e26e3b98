import SQLiteSupport

/// The history of a local container: superseded versions in `versions`, the trash (tombstones
/// not yet purged) in `entries`, and the retention policy in `settings` (doc/FORMATS.md,
/// "`container.db`"). Reads see one committed snapshot each.
extension LocalEntryStore {
    /// The versions of `id` newest first: the current row (unless a purged tombstone), then the
    /// superseded ones; at most `limit`.
    func history(of id: FileID, limit: Int) throws(ContainerProtocolError) -> [HistoricVersion] {
        try withConnection { connection in
            try connection.readTransaction { () throws -> [HistoricVersion] in
                var versions: [HistoricVersion] = []
                let current = try connection.statement(
                    "SELECT \(LocalEntryRow.columns), committed_at FROM entries WHERE id = ? AND purged = 0")
                defer { current.reset() }
                current.bind(1, id.hex)
                if try current.step() {
                    versions.append(
                        HistoricVersion(
                            entry: try LocalEntryRow.entry(current), committedAt: current.int64(13), replacedAt: nil))
                }
                current.reset()
                let older = try connection.statement(
                    """
                    SELECT \(LocalEntryRow.columns), committed_at, replaced_at FROM versions
                    WHERE id = ? ORDER BY version DESC LIMIT ?
                    """)
                defer { older.reset() }
                older.bind(1, id.hex)
                older.bind(2, Int64(limit - versions.count))
                while versions.count < limit, try older.step() {
                    versions.append(
                        HistoricVersion(
                            entry: try LocalEntryRow.entry(older), committedAt: older.int64(13),
                            replacedAt: older.int64(14)))
                }
                return versions
            }
        }
    }

    /// The trash: tombstones not purged, with a version below `before`, newest first.
    func deletedEntries(before: EntryVersion?, limit: Int) throws(ContainerProtocolError) -> [HistoricVersion] {
        try withConnection { connection in
            let statement = try connection.statement(
                """
                SELECT \(LocalEntryRow.columns), committed_at FROM entries
                WHERE deleted = 1 AND purged = 0 AND version < ? ORDER BY version DESC LIMIT ?
                """)
            defer { statement.reset() }
            statement.bind(1, before.map { Int64(clamping: $0) } ?? Int64.max)
            statement.bind(2, Int64(limit))
            var tombstones: [HistoricVersion] = []
            while try statement.step() {
                tombstones.append(
                    HistoricVersion(
                        entry: try LocalEntryRow.entry(statement), committedAt: statement.int64(13), replacedAt: nil))
            }
            return tombstones
        }
    }

    func retention() throws(ContainerProtocolError) -> RetentionPolicy {
        try withConnection { connection in try Self.retention(in: connection) }
    }

    func setRetention(_ policy: RetentionPolicy) throws(ContainerProtocolError) {
        if let problem = policy.problem { throw .invalidRequest(problem) }
        try withConnection { connection in
            try connection.transaction { () throws in
                let statement = try connection.statement("UPDATE settings SET value = ? WHERE name = ?")
                for (name, value) in [("retention_days", policy.days), ("retention_versions", policy.versions)] {
                    statement.bind(1, Int64(value))
                    statement.bind(2, name)
                    try statement.run()
                    statement.reset()
                }
            }
        }
    }

    /// The policy in `settings`; a damaged one is a storage failure, never a guess.
    static func retention(in connection: SQLiteConnection) throws -> RetentionPolicy {
        let policy = RetentionPolicy(
            days: Int(clamping: try setting("retention_days", in: connection)),
            versions: Int(clamping: try setting("retention_versions", in: connection)))
        if let problem = policy.problem { throw ContainerProtocolError.storageFailure("the stored \(problem)") }
        return policy
    }

    static func setting(_ name: String, in connection: SQLiteConnection) throws -> Int64 {
        let statement = try connection.statement("SELECT value FROM settings WHERE name = ?")
        defer { statement.reset() }
        statement.bind(1, name)
        guard try statement.step() else { throw ContainerProtocolError.storageFailure("the setting \(name) is gone") }
        return statement.int64(0)
    }
}
