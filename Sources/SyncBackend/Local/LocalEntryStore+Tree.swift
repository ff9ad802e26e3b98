import SQLiteSupport

/// Name lookups of a local container (`ContainerTree`) on the `entries_live_names` index
/// (`parent`, `name`, live rows only). Names are BLOBs, which SQLite orders with `memcmp` (then
/// the shorter first): unsigned byte order. Each lookup is one statement, so one snapshot.
extension LocalEntryStore {
    /// The live child `name` of `parent`, if `parent` is a live directory.
    func child(named name: [UInt8], of parent: FileID) throws(ContainerProtocolError) -> RemoteEntry? {
        try withConnection { connection in
            let statement = try connection.statement(
                """
                SELECT \(LocalEntryRow.columns) FROM entries
                WHERE parent = ?1 AND name = ?2 AND deleted = 0 AND \(Self.parentIsLiveDirectory)
                """)
            defer { statement.reset() }
            statement.bind(1, parent.hex)
            statement.bind(2, bytes: name)
            return try statement.step() ? try LocalEntryRow.entry(statement) : nil
        }
    }

    /// Up to `limit` live children of `parent` in name order, from `TreePage.lowestName(after:)`;
    /// none unless `parent` is a live directory.
    func children(of parent: FileID, after: [UInt8]?, limit: Int) throws(ContainerProtocolError) -> [RemoteEntry] {
        try withConnection { connection in
            let statement = try connection.statement(
                """
                SELECT \(LocalEntryRow.columns) FROM entries
                WHERE parent = ?1 AND name >= ?2 AND deleted = 0 AND \(Self.parentIsLiveDirectory)
                ORDER BY name LIMIT ?3
                """)
            defer { statement.reset() }
            statement.bind(1, parent.hex)
            statement.bind(2, bytes: TreePage.lowestName(after: after))
            statement.bind(3, Int64(limit))
            var children: [RemoteEntry] = []
            while try statement.step() { children.append(try LocalEntryRow.entry(statement)) }
            return children
        }
    }

    /// True when the parent (`?1`) is a live directory. The root is one even before its first
    /// commit gives it a row.
    private static let parentIsLiveDirectory = """
        (?1 = '\(FileID.root.hex)' OR EXISTS (
            SELECT 1 FROM entries AS p WHERE p.id = ?1 AND p.deleted = 0 AND p.kind = \(NodeKind.directory.rawValue)))
        """
}
