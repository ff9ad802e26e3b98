import PostgresNIO
import SyncBackend

/// How an entry is stored as a row of `syncfs_entries`: the columns of the local container's
/// `entries` table (`LocalEntryRow`), with IDs as lowercase hex text and the manifest and
/// extended attributes in `LocalEntryEncoding`'s byte formats (doc/FORMATS.md).
enum PostgresEntryRow {
    /// The columns `entry(_:)` reads, in its order.
    static let columns =
        "file_id, version, deleted, device, parent, name, kind, mode, mtime, size, xattrs, symlink_target, manifest"

    /// The entry in `row` (selected with `columns`).
    static func entry(_ row: PostgresRow) throws -> RemoteEntry {
        try entry(row.makeRandomAccess(), at: 0)
    }

    /// The entry in `row`'s cells `offset ..< offset + 13` (selected with `columns` after
    /// `offset` other cells).
    static func entry(_ row: PostgresRandomAccessRow, at offset: Int) throws -> RemoteEntry {
        let cells = OffsetCells(row: row, offset: offset)
        guard let id = FileID(hex: try cells[0].decode(String.self)),
            let version = EntryVersion(exactly: try cells[1].decode(Int64.self)),
            let kind = NodeKind(rawValue: Int64(try cells[6].decode(Int16.self)))
        else { throw ContainerProtocolError.storageFailure("a stored entry is damaged") }
        var parent: FileID?
        if let text = try cells[4].decode(String?.self) {
            guard let value = FileID(hex: text) else {
                throw ContainerProtocolError.storageFailure("a stored entry is damaged")
            }
            parent = value
        }
        let state = EntryState(
            parent: parent, name: bytes(try cells[5].decode(ByteBuffer.self)), kind: kind,
            mode: UInt32(truncatingIfNeeded: try cells[7].decode(Int32.self)),
            mtime: try cells[8].decode(Int64.self), size: try cells[9].decode(Int64.self),
            xattrs: try LocalEntryEncoding.decodeXattrs(try cells[10].decode(ByteBuffer?.self).map(bytes)),
            symlinkTarget: try cells[11].decode(ByteBuffer?.self).map(bytes),
            manifest: try LocalEntryEncoding.decodeManifest(try cells[12].decode(ByteBuffer?.self).map(bytes)))
        return RemoteEntry(
            id: id, version: version, isDeleted: try cells[2].decode(Bool.self),
            device: try cells[3].decode(String.self), state: state)
    }

    /// The statement that applies a commit: sets container `rowID`'s counter to `entry.version`,
    /// writes `entry` as the one row of its ID, and queues `NOTIFY syncfs_changes` with the row
    /// ID (PostgreSQL delivers it when the transaction commits). One round trip: the counter's
    /// `UPDATE` is a data-modifying `WITH`, which always runs to completion, and the notification
    /// is the `RETURNING` of the upsert's one row. The replaced row (unless its content was
    /// purged) is copied into `syncfs_versions` by another data-modifying `WITH`, which reads it
    /// as it was before the statement (schema 4, `PostgresHistorySchema`).
    static func apply(_ entry: RemoteEntry, container rowID: Int64) -> PostgresQuery {
        let state = entry.state
        let xattrs = LocalEntryEncoding.encodeXattrs(state.xattrs).map { ByteBuffer(bytes: $0) }
        let target = state.symlinkTarget.map { ByteBuffer(bytes: $0) }
        let manifest = LocalEntryEncoding.encodeManifest(state.manifest).map { ByteBuffer(bytes: $0) }
        return """
            WITH stamp AS MATERIALIZED (SELECT syncfs_now_ns() AS ns),
            counter AS (UPDATE syncfs_containers SET version = \(Int64(entry.version)) WHERE id = \(rowID)),
            kept AS (
                INSERT INTO syncfs_versions (container, \(unescaped: columns), committed_at, replaced_at)
                SELECT container, \(unescaped: columns), committed_at, (SELECT ns FROM stamp) FROM syncfs_entries
                WHERE container = \(rowID) AND file_id = \(entry.id.hex) AND NOT purged
                ON CONFLICT DO NOTHING)
            INSERT INTO syncfs_entries (container, \(unescaped: columns), committed_at, purged)
            VALUES (\(rowID), \(entry.id.hex), \(Int64(entry.version)), \(entry.isDeleted), \(entry.device),
                \(state.parent?.hex), \(ByteBuffer(bytes: state.name)), \(Int16(state.kind.rawValue)),
                \(Int32(bitPattern: state.mode)), \(state.mtime), \(state.size), \(xattrs), \(target), \(manifest),
                (SELECT ns FROM stamp), false)
            ON CONFLICT (container, file_id) DO UPDATE SET
                version = excluded.version, deleted = excluded.deleted, device = excluded.device,
                parent = excluded.parent, name = excluded.name, kind = excluded.kind, mode = excluded.mode,
                mtime = excluded.mtime, size = excluded.size, xattrs = excluded.xattrs,
                symlink_target = excluded.symlink_target, manifest = excluded.manifest,
                committed_at = excluded.committed_at, purged = false
            RETURNING pg_notify(\(PostgresStore.channel), \(String(rowID)))
            """
    }

    static func bytes(_ buffer: ByteBuffer) -> [UInt8] { Array(buffer.readableBytesView) }

    /// The cells of a row counted from `offset`.
    private struct OffsetCells {
        let row: PostgresRandomAccessRow
        let offset: Int
        subscript(index: Int) -> PostgresCell { row[offset + index] }
    }

    /// The entries `rows` hold, in order.
    static func entries(_ rows: PostgresRowSequence) async throws -> [RemoteEntry] {
        var entries: [RemoteEntry] = []
        for try await row in rows { entries.append(try entry(row)) }
        return entries
    }
}
