import PostgresNIO
import SyncBackend

/// Many entries as the columns of `syncfs_entries` (the encoding of `PostgresEntryRow`), one
/// array per column, for one `INSERT … SELECT … FROM unnest(…)` (`upsert`): a single round trip
/// and a single statement for a whole page of an import, instead of one per row.
///
/// PostgreSQL arrays of PostgresNIO have no NULL elements, so each nullable column travels as a
/// value array plus a "present" flag array (`parent` as `''` when absent: an ID is never empty).
/// An ID given more than once keeps only its newest version (one statement cannot upsert a row
/// twice).
struct PostgresBulkEntries {
    private(set) var ids: [String] = []
    private(set) var versions: [Int64] = []
    private var deleted: [Bool] = []
    private var devices: [String] = []
    private var parents: [String] = []
    private var names: [ByteBuffer] = []
    private var kinds: [Int16] = []
    private var modes: [Int32] = []
    private var mtimes: [Int64] = []
    private var sizes: [Int64] = []
    private var xattrs: [ByteBuffer] = []
    private var hasXattrs: [Bool] = []
    private var targets: [ByteBuffer] = []
    private var hasTarget: [Bool] = []
    private var manifests: [ByteBuffer] = []
    private var hasManifest: [Bool] = []
    /// The newest version among the entries (0 when none).
    private(set) var newest: Int64 = 0

    init(_ entries: [RemoteEntry]) {
        var newestOf: [FileID: RemoteEntry] = [:]
        for entry in entries where (newestOf[entry.id]?.version ?? 0) < entry.version { newestOf[entry.id] = entry }
        for entry in newestOf.values.sorted(by: { $0.version < $1.version }) { append(entry) }
    }

    private mutating func append(_ entry: RemoteEntry) {
        let state = entry.state
        ids.append(entry.id.hex)
        versions.append(Int64(entry.version))
        newest = max(newest, Int64(entry.version))
        deleted.append(entry.isDeleted)
        devices.append(entry.device)
        parents.append(state.parent?.hex ?? "")
        names.append(ByteBuffer(bytes: state.name))
        kinds.append(Int16(state.kind.rawValue))
        modes.append(Int32(bitPattern: state.mode))
        mtimes.append(state.mtime)
        sizes.append(state.size)
        Self.append(LocalEntryEncoding.encodeXattrs(state.xattrs), to: &xattrs, &hasXattrs)
        Self.append(state.symlinkTarget, to: &targets, &hasTarget)
        Self.append(LocalEntryEncoding.encodeManifest(state.manifest), to: &manifests, &hasManifest)
    }

    private static func append(_ bytes: [UInt8]?, to values: inout [ByteBuffer], _ present: inout [Bool]) {
        values.append(ByteBuffer(bytes: bytes ?? []))
        present.append(bytes != nil)
    }

    /// The statement writing every row into container `rowID` (an existing row of the same ID
    /// is overwritten, as `PostgresEntryRow.apply` does), committed now by the database's clock:
    /// an imported tombstone stays in the trash for the retention period from the import.
    func upsert(container rowID: Int64) -> PostgresQuery {
        """
        INSERT INTO syncfs_entries (container, file_id, version, deleted, device, parent, name, kind, mode, mtime,
            size, xattrs, symlink_target, manifest, committed_at, purged)
        SELECT \(rowID), u.file_id, u.version, u.deleted, u.device, NULLIF(u.parent, ''), u.name, u.kind, u.mode,
            u.mtime, u.size, CASE WHEN u.has_xattrs THEN u.xattrs END, CASE WHEN u.has_target THEN u.target END,
            CASE WHEN u.has_manifest THEN u.manifest END, syncfs_now_ns(), false
        FROM unnest(\(ids)::text[], \(versions)::bigint[], \(deleted)::boolean[], \(devices)::text[],
            \(parents)::text[], \(names)::bytea[], \(kinds)::smallint[], \(modes)::integer[], \(mtimes)::bigint[],
            \(sizes)::bigint[], \(xattrs)::bytea[], \(hasXattrs)::boolean[], \(targets)::bytea[],
            \(hasTarget)::boolean[], \(manifests)::bytea[], \(hasManifest)::boolean[])
            AS u(file_id, version, deleted, device, parent, name, kind, mode, mtime, size, xattrs, has_xattrs,
                target, has_target, manifest, has_manifest)
        ON CONFLICT (container, file_id) DO UPDATE SET
            version = excluded.version, deleted = excluded.deleted, device = excluded.device,
            parent = excluded.parent, name = excluded.name, kind = excluded.kind, mode = excluded.mode,
            mtime = excluded.mtime, size = excluded.size, xattrs = excluded.xattrs,
            symlink_target = excluded.symlink_target, manifest = excluded.manifest,
            committed_at = excluded.committed_at, purged = false
        """
    }
}
