import PostgresNIO
import SyncBackend

/// Name lookups of a `PostgresContainer` (`ContainerTree`) on the `syncfs_entries_live_children`
/// index (`container`, `parent`, `name`, live rows only). `name` is `bytea`, which PostgreSQL
/// orders byte by byte as unsigned values (then the shorter first), independent of any collation.
/// Each lookup is one statement, so one snapshot.
extension PostgresContainer: ContainerTree {
    public func child(named name: [UInt8], of parent: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await store.run("look up a child of \(parent)") { [rowID] client in
            try await PostgresEntryRow.entries(
                try await client.query(
                    """
                    SELECT \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                    WHERE container = \(rowID) AND parent = \(parent.hex) AND name = \(ByteBuffer(bytes: name))
                        AND NOT deleted AND (\(parent == .root) OR EXISTS (
                            SELECT 1 FROM syncfs_entries AS p
                            WHERE p.container = \(rowID) AND p.file_id = \(parent.hex) AND NOT p.deleted
                                AND p.kind = \(Self.directoryKind)))
                    """)
            ).first
        }
    }

    public func children(of parent: FileID, after: [UInt8]?, limit: Int) async throws(ContainerProtocolError)
        -> [RemoteEntry]
    {
        let limit = try TreePage.size(limit)
        let lowest = ByteBuffer(bytes: TreePage.lowestName(after: after))
        return try await store.run("list the children of \(parent)") { [rowID] client in
            try await PostgresEntryRow.entries(
                try await client.query(
                    """
                    SELECT \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                    WHERE container = \(rowID) AND parent = \(parent.hex) AND name >= \(lowest)
                        AND NOT deleted AND (\(parent == .root) OR EXISTS (
                            SELECT 1 FROM syncfs_entries AS p
                            WHERE p.container = \(rowID) AND p.file_id = \(parent.hex) AND NOT p.deleted
                                AND p.kind = \(Self.directoryKind)))
                    ORDER BY name LIMIT \(limit)
                    """))
        }
    }

    /// The stored kind of a directory. Both queries answer only when the parent is a live
    /// directory; the root is one even before its first commit gives it a row.
    private static let directoryKind = Int16(NodeKind.directory.rawValue)
}
