import PostgresNIO
import SyncBackend

/// The history of a `PostgresContainer` (`ContainerHistory`): the current row of an entry in
/// `syncfs_entries` (unless it is a purged tombstone) and its superseded versions in
/// `syncfs_versions`, which every commit fills in the statement that replaces a row
/// (`PostgresHistorySchema`). Times are the database's clock (`syncfs_now_ns()`).
extension PostgresContainer: ContainerHistory {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        let limit = try HistoryPage.size(limit)
        return try await store.run("read the history of \(id)") { [rowID] client in
            try await Self.versions(
                try await client.query(
                    """
                    SELECT \(unescaped: PostgresEntryRow.columns), committed_at, NULL::bigint AS replaced_at
                    FROM syncfs_entries WHERE container = \(rowID) AND file_id = \(id.hex) AND NOT purged
                    UNION ALL
                    SELECT \(unescaped: PostgresEntryRow.columns), committed_at, replaced_at
                    FROM syncfs_versions WHERE container = \(rowID) AND file_id = \(id.hex)
                    ORDER BY version DESC LIMIT \(limit)
                    """))
        }
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        let limit = try HistoryPage.size(limit)
        let below = before.map { Int64(clamping: $0) } ?? .max
        return try await store.run("read the deleted entries") { [rowID] client in
            try await Self.versions(
                try await client.query(
                    """
                    SELECT \(unescaped: PostgresEntryRow.columns), committed_at, NULL::bigint AS replaced_at
                    FROM syncfs_entries
                    WHERE container = \(rowID) AND deleted AND NOT purged AND version < \(below)
                    ORDER BY version DESC LIMIT \(limit)
                    """))
        }
    }

    /// The versions in `rows`: an entry's columns (`PostgresEntryRow.columns`), then
    /// `committed_at` and `replaced_at`.
    static func versions(_ rows: PostgresRowSequence) async throws -> [HistoricVersion] {
        var versions: [HistoricVersion] = []
        for try await row in rows {
            let cells = row.makeRandomAccess()
            versions.append(
                HistoricVersion(
                    entry: try PostgresEntryRow.entry(cells, at: 0), committedAt: try cells[13].decode(Int64.self),
                    replacedAt: try cells[14].decode(Int64?.self)))
        }
        return versions
    }
}
