import SQLiteSupport

/// How an entry is stored as a row of `container.db`'s `entries` table (see
/// `LocalContainerSchema` and `LocalEntryEncoding`).
enum LocalEntryRow {
    /// The columns `entry(_:)` reads, in its order.
    static let columns =
        "id, version, deleted, device, parent, name, kind, mode, mtime, size, xattrs, symlink_target, manifest"

    /// The entry in the current row of `statement` (selected with `columns`).
    static func entry(_ statement: SQLiteStatement) throws(ContainerProtocolError) -> RemoteEntry {
        guard let id = FileID(hex: statement.text(0)),
            let version = EntryVersion(exactly: statement.int64(1)),
            let kind = NodeKind(rawValue: statement.int64(6))
        else { throw .storageFailure("a stored entry is damaged") }
        var parent: FileID?
        if !statement.isNull(4) {
            guard let value = FileID(hex: statement.text(4)) else { throw .storageFailure("a stored entry is damaged") }
            parent = value
        }
        let state = EntryState(
            parent: parent, name: statement.bytes(5) ?? [], kind: kind,
            mode: UInt32(truncatingIfNeeded: statement.int64(7)),
            mtime: statement.int64(8), size: statement.int64(9),
            xattrs: try LocalEntryEncoding.decodeXattrs(statement.bytes(10)),
            symlinkTarget: statement.bytes(11),
            manifest: try LocalEntryEncoding.decodeManifest(statement.bytes(12)))
        return RemoteEntry(
            id: id, version: version, isDeleted: statement.int64(2) != 0,
            device: statement.text(3), state: state)
    }

    /// Copies the current row of `id` into `versions`, replaced at `replacedAt`, unless there is
    /// none or it is a purged tombstone (its content is no longer kept). Runs in the commit's
    /// transaction, before the row is overwritten.
    static func keepSuperseded(_ id: FileID, replacedAt: Int64, in connection: SQLiteConnection) throws {
        let statement = try connection.statement(
            """
            INSERT INTO versions (\(columns), committed_at, replaced_at)
            SELECT \(columns), committed_at, ? FROM entries WHERE id = ? AND purged = 0
            """)
        statement.bind(1, replacedAt)
        statement.bind(2, id.hex)
        try statement.run()
    }

    /// Writes `entry` as the one row of its ID, committed at `committedAt` (ns since the epoch).
    static func upsert(_ entry: RemoteEntry, committedAt: Int64, in connection: SQLiteConnection) throws {
        let statement = try connection.statement(
            """
            INSERT INTO entries (\(columns), committed_at, purged) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
            ON CONFLICT (id) DO UPDATE SET
                version = excluded.version, deleted = excluded.deleted, device = excluded.device,
                parent = excluded.parent, name = excluded.name, kind = excluded.kind, mode = excluded.mode,
                mtime = excluded.mtime, size = excluded.size, xattrs = excluded.xattrs,
                symlink_target = excluded.symlink_target, manifest = excluded.manifest,
                committed_at = excluded.committed_at, purged = 0
            """)
        let state = entry.state
        statement.bind(1, entry.id.hex)
        statement.bind(2, Int64(entry.version))
        statement.bind(3, entry.isDeleted ? 1 : 0)
        statement.bind(4, entry.device)
        if let parent = state.parent { statement.bind(5, parent.hex) } else { statement.bindNull(5) }
        statement.bind(6, bytes: state.name)
        statement.bind(7, state.kind.rawValue)
        statement.bind(8, Int64(state.mode))
        statement.bind(9, state.mtime)
        statement.bind(10, state.size)
        statement.bind(11, bytes: LocalEntryEncoding.encodeXattrs(state.xattrs))
        statement.bind(12, bytes: state.symlinkTarget)
        statement.bind(13, bytes: LocalEntryEncoding.encodeManifest(state.manifest))
        statement.bind(14, committedAt)
        try statement.run()
    }
}
