import Glibc
import SQLiteSupport

/// The garbage collection of a local container (`CollectableContainer.collectGarbage`; doc/SEMANTICS.md
/// "Garbage collection"), on a database connection of its own so that the container's other
/// calls (commits of this process included) run meanwhile.
///
/// 1. **Prune**, decided on one snapshot and applied in batches of write transactions: superseded
///    versions and tombstones past retention
///    (`RetentionPolicy.keepsVersion`, ranked per entry newest first; `keepsTombstone`, a tombstone
///    of unknown time counting from when the container started keeping history). Purged
///    tombstones stay in the feed, out of the trash.
/// 2. **Mark**, from one read snapshot: the chunks the manifests of live entries, kept tombstones
///    and kept versions name, and the version counter of that snapshot.
/// 3. **Candidates**: chunk files not marked whose mtime is older than `grace` (a `put` refreshes
///    it, `LocalChunkStore`).
/// 4. **Sweep** in batches, each inside `BEGIN IMMEDIATE` (no commit runs meanwhile): the chunks
///    named by rows committed after the snapshot are dropped from the candidates (revived), the
///    snapshot moves to the current version, each file's mtime is checked again, and the file is
///    unlinked inside the transaction. A commit checks its chunks inside its own transaction, so
///    it either came before the batch (and revived the chunk) or finds it missing and is refused
///    with `chunksMissing` (the client uploads it again).
///
/// Temporary chunk files (`.tmp-…`) older than a day, left by writers that died, are removed too.
/// A dry run prunes and unlinks nothing and counts what would go.
struct LocalCollector {
    let layout: LocalLayout
    /// Rows or candidates per write transaction: short write-lock holds between commits.
    static let batchSize = 512
    static let temporaryFileAge: Int64 = RetentionPolicy.nanosecondsPerDay

    func collect(_ options: CollectionOptions) throws(ContainerProtocolError) -> CollectionReport {
        try layout.checkReachable()
        return try mapped { () throws in
            let connection = try LocalEntryStore.open(layout.databasePath, create: false)
            var report = CollectionReport()
            let retention = try options.retention ?? LocalEntryStore.retention(in: connection)
            if let problem = retention.problem { throw ContainerProtocolError.invalidRequest(problem) }
            let pruned = try prune(
                connection, retention, now: options.now ?? WallClock.nanoseconds(),
                dryRun: options.dryRun, report: &report)
            let (marked, snapshot) = try mark(connection, excluding: options.dryRun ? pruned : [])
            let files = try LocalChunkFiles(layout: layout)
            report.chunksExamined = files.chunks.count
            let grace = WallClock.nanoseconds(options.grace)
            var candidates: [ChunkHash] = []
            for hash in files.chunks where !marked.contains(hash) {
                guard let info = files.info(hash) else { continue }
                if info.isWithin(grace) {
                    report.chunksInGrace += 1
                } else if options.dryRun {
                    report.chunksDeleted += 1
                    report.bytesFreed += info.size
                } else {
                    candidates.append(hash)
                }
            }
            if !options.dryRun {
                try sweep(candidates, connection: connection, snapshot: snapshot, grace: grace, report: &report)
                files.removeStaleTemporaryFiles(olderThan: Self.temporaryFileAge)
            }
            return report
        }
    }

    func stats() throws(ContainerProtocolError) -> StorageStats {
        try layout.checkReachable()
        return try mapped { () throws in
            let connection = try LocalEntryStore.open(layout.databasePath, create: false)
            var stats = StorageStats()
            try connection.readTransaction { () throws in
                let counts = try connection.statement(
                    """
                    SELECT
                        COALESCE(SUM(deleted = 0), 0), COALESCE(SUM(deleted = 1 AND purged = 0), 0),
                        COALESCE(SUM(deleted = 1), 0), COALESCE(SUM(CASE WHEN deleted = 0 AND kind = 1 THEN size END), 0)
                    FROM entries
                    """)
                defer { counts.reset() }
                _ = try counts.step()
                stats.liveEntries = Int(counts.int64(0))
                stats.trashedEntries = Int(counts.int64(1))
                stats.tombstones = Int(counts.int64(2))
                stats.logicalBytes = counts.int64(3)
                let versions = try connection.statement("SELECT COUNT(*) FROM versions")
                defer { versions.reset() }
                _ = try versions.step()
                stats.keptVersions = Int(versions.int64(0))
            }
            let files = try LocalChunkFiles(layout: layout)
            for hash in files.chunks {
                guard let info = files.info(hash, readingHeader: true) else { continue }
                stats.chunks += 1
                stats.storedBytes += info.size
                stats.chunkPlainBytes += info.plainLength
            }
            return stats
        }
    }

    // MARK: Steps

    /// Prunes (or, dry, finds) what is past `retention`; returns the versions of the rows that go.
    ///
    /// Decided on one read snapshot, applied in short write transactions (commits wait at most
    /// one batch). What was decided stays past retention: times only move on, and later commits
    /// only push an entry's older versions further down its ranks. A tombstone re-created
    /// meanwhile is no longer the row of its version, so it is not purged.
    private func prune(
        _ connection: SQLiteConnection, _ retention: RetentionPolicy, now: Int64, dryRun: Bool,
        report: inout CollectionReport
    ) throws -> Set<Int64> {
        let (versions, tombstones) = try connection.readTransaction { () throws -> ([Int64], [Int64]) in
            var versions: [Int64] = []
            let superseded = try connection.statement(
                "SELECT id, version, replaced_at FROM versions ORDER BY id DESC, version DESC")
            defer { superseded.reset() }
            var entry = ""
            var rank = 0
            while try superseded.step() {
                let id = superseded.text(0)
                rank = id == entry ? rank + 1 : 0
                entry = id
                if !retention.keepsVersion(replacedAt: superseded.int64(2), rank: rank, now: now) {
                    versions.append(superseded.int64(1))
                }
            }
            let historySince = try LocalEntryStore.setting("history_since", in: connection)
            var tombstones: [Int64] = []
            let trash = try connection.statement(
                "SELECT version, committed_at FROM entries WHERE deleted = 1 AND purged = 0")
            defer { trash.reset() }
            while try trash.step() {
                let committedAt = trash.int64(1)
                let deletedAt = committedAt == 0 ? historySince : committedAt
                if !retention.keepsTombstone(deletedAt: deletedAt, now: now) { tombstones.append(trash.int64(0)) }
            }
            return (versions, tombstones)
        }
        if dryRun {
            report.versionsPruned = versions.count
            report.tombstonesPurged = tombstones.count
            return Set(versions).union(tombstones)
        }
        report.versionsPruned = try applyInBatches(
            versions, "DELETE FROM versions WHERE version = ? RETURNING version", connection)
        report.tombstonesPurged = try applyInBatches(
            tombstones,
            "UPDATE entries SET purged = 1 WHERE version = ? AND deleted = 1 AND purged = 0 RETURNING version",
            connection)
        return []
    }

    /// Runs `sql` (one row per change it made) for each of `versions`, `batchSize` per write
    /// transaction; the number of rows changed.
    private func applyInBatches(_ versions: [Int64], _ sql: String, _ connection: SQLiteConnection) throws -> Int {
        var changed = 0
        var start = 0
        while start < versions.count {
            let batch = versions[start..<min(start + Self.batchSize, versions.count)]
            start += batch.count
            try connection.transaction { () throws in
                let statement = try connection.statement(sql)
                for version in batch {
                    statement.reset()
                    statement.bind(1, version)
                    while try statement.step() { changed += 1 }
                }
                statement.reset()
            }
        }
        return changed
    }

    /// The chunks every kept row names (minus the rows `excluding`), from one snapshot, and its
    /// version counter.
    private func mark(_ connection: SQLiteConnection, excluding: Set<Int64>) throws -> (Set<ChunkHash>, EntryVersion) {
        try connection.readTransaction { () throws -> (Set<ChunkHash>, EntryVersion) in
            let snapshot = try LocalEntryStore.counter(in: connection)
            var marked = Set<ChunkHash>()
            for sql in [
                "SELECT version, manifest FROM entries WHERE manifest IS NOT NULL AND NOT (deleted = 1 AND purged = 1)",
                "SELECT version, manifest FROM versions WHERE manifest IS NOT NULL",
            ] {
                let rows = try connection.statement(sql)
                defer { rows.reset() }
                while try rows.step() {
                    if excluding.contains(rows.int64(0)) { continue }
                    for ref in try LocalEntryEncoding.decodeManifest(rows.bytes(1)) { marked.insert(ref.hash) }
                }
            }
            return (marked, snapshot)
        }
    }

    /// Deletes `candidates` in batches, each under the write lock, after reviving what rows
    /// committed since `snapshot` name.
    private func sweep(
        _ candidates: [ChunkHash], connection: SQLiteConnection, snapshot: EntryVersion, grace: Int64,
        report: inout CollectionReport
    ) throws {
        var remaining = Set(candidates)
        var snapshot = snapshot
        var start = 0
        while start < candidates.count {
            let batch = candidates[start..<min(start + Self.batchSize, candidates.count)]
            start += batch.count
            try connection.transaction { () throws in
                let current = try LocalEntryStore.counter(in: connection)
                if current > snapshot {
                    for hash in try chunksCommitted(after: snapshot, in: connection) where remaining.remove(hash) != nil
                    {
                        report.chunksRevived += 1
                    }
                    snapshot = current
                }
                for hash in batch where remaining.remove(hash) != nil {
                    let path = layout.chunkPath(hash)
                    guard let info = LocalChunkFiles.info(path) else { continue }  // gone already
                    if info.isWithin(grace) {
                        report.chunksInGrace += 1
                        continue
                    }
                    guard unlink(path) == 0 else {
                        if errno == ENOENT { continue }
                        throw LocalFileIO.failure("cannot delete chunk \(hash)", errno: errno)
                    }
                    report.chunksDeleted += 1
                    report.bytesFreed += info.size
                }
            }
        }
    }

    /// The chunks named by rows (current or superseded) committed after `version`.
    private func chunksCommitted(after version: EntryVersion, in connection: SQLiteConnection) throws -> Set<ChunkHash>
    {
        var hashes = Set<ChunkHash>()
        for sql in [
            "SELECT manifest FROM entries WHERE version > ? AND manifest IS NOT NULL",
            "SELECT manifest FROM versions WHERE version > ? AND manifest IS NOT NULL",
        ] {
            let rows = try connection.statement(sql)
            defer { rows.reset() }
            rows.bind(1, Int64(clamping: version))
            while try rows.step() {
                for ref in try LocalEntryEncoding.decodeManifest(rows.bytes(0)) { hashes.insert(ref.hash) }
            }
        }
        return hashes
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

extension SQLiteConnection {
    /// Runs `body` inside `BEGIN … COMMIT` (deferred: one read snapshot, no write lock).
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
