import Logging
import PostgresNIO
import SyncBackend

/// One garbage collection of a `PostgresContainer` (`CollectableContainer.collectGarbage`,
/// doc/SEMANTICS.md "Garbage collection", PostgreSQL):
///
/// 1. Leftovers: the container's rows a collection left "being deleted", and sweep records
///    older than `PostgresChunkClaim.takeover` (a sweep that died), are swept (`PostgresSweep`).
/// 2. Prune: superseded versions past the policy are deleted from `syncfs_versions`, tombstones
///    past it are flagged purged (their content leaves the trash; they stay in the feed).
/// 3. Snapshot: in one `REPEATABLE READ` read-only transaction, the container's version counter
///    V, every chunk the kept versions reference — every version still stored after step 2, and
///    every entry but purged tombstones (manifests decoded here, with the entry encoding: a
///    damaged one stops the collection) — and the container's chunk rows. The rows no kept
///    version references are the candidates.
/// 4. Batches: each in a transaction holding the container row's lock (`FOR UPDATE`, which every
///    commit's write takes too): the manifests of versions committed after V (and V moved on;
///    most of them read just before, without the lock: `catchUp`) revive the candidates they
///    reference; the other candidates stored before the grace cutoff
///    are marked "being deleted" — so a commit whose lookup saw them live finds its fingerprint
///    changed, looks again, and is refused `chunksMissing`. After each batch the marked hashes
///    are swept store-wide (their blobs go if no other container holds them).
/// A dry run does 2 and 3 without writing (the counts of 2 by the same predicates) and counts
/// what 4 would mark. "Now" is `CollectionOptions.now`, else the database's clock, once for the
/// whole collection: a chunk stored after it started is never a candidate.
struct PostgresCollection {
    let rowID: Int64
    let store: PostgresStore
    let policy: RetentionPolicy
    let now: Int64
    /// A chunk stored at or after this is within the grace period.
    let graceCutoff: Int64
    /// A version replaced (a tombstone committed) at or before this is past `policy.days`.
    let cutoff: Int64

    static let batchSize = 1000

    init(container: PostgresContainer, policy: RetentionPolicy, now: Int64, grace: Duration) {
        rowID = container.rowID
        store = container.store
        self.policy = policy
        self.now = now
        let (graceCutoff, graceOverflow) = now.subtractingReportingOverflow(grace.wholeNanoseconds)
        self.graceCutoff = graceOverflow ? .min : graceCutoff
        cutoff = now - Int64(policy.days) * RetentionPolicy.nanosecondsPerDay
    }

    /// A chunk row no kept version referenced when the snapshot was taken.
    struct Candidate: Sendable {
        let hash: ChunkHash
        let storedAt: Int64
        let length: Int64
    }

    /// What step 3 read.
    struct Snapshot: Sendable {
        var version: Int64 = 0
        var referenced = Set<ChunkHash>()
        var candidates: [Candidate] = []
        var examined = 0
    }

    /// Reading a whole container may take longer than one operation.
    private var longTimeout: Duration { max(store.options.operationTimeout * 60, .seconds(600)) }
    private var logger: Logger { store.options.logger }

    func run(dryRun: Bool) async throws(ContainerProtocolError) -> CollectionReport {
        let clock = ContinuousClock()
        let started = clock.now
        var report = CollectionReport()
        if !dryRun { try await finishLeftovers() }
        (report.versionsPruned, report.tombstonesPurged) = try await prune(dryRun: dryRun)
        let pruned = clock.now
        var snapshot = try await readSnapshot(dryRun: dryRun)
        let read = clock.now
        report.chunksExamined = snapshot.examined
        defer {
            logger.info(
                "garbage collection",
                metadata: [
                    "container": "\(rowID)", "dry_run": "\(dryRun)", "report": "\(report)",
                    "prune": "\(pruned - started)", "snapshot": "\(read - pruned)",
                    "mark_and_sweep": "\(clock.now - read)",
                ])
        }
        if dryRun {
            for candidate in snapshot.candidates {
                if candidate.storedAt < graceCutoff {
                    report.chunksDeleted += 1
                    report.bytesFreed += candidate.length
                } else {
                    report.chunksInGrace += 1
                }
            }
            return report
        }
        var start = 0
        while start < snapshot.candidates.count {
            let batch = Array(snapshot.candidates[start..<min(start + Self.batchSize, snapshot.candidates.count)])
            start += Self.batchSize
            let marked = try await mark(batch, snapshot: &snapshot)
            report.chunksRevived += marked.revived
            report.chunksDeleted += marked.hashes.count
            report.bytesFreed += marked.bytes
            report.chunksInGrace += batch.count - marked.revived - marked.hashes.count
            _ = try await PostgresSweep.sweep(marked.hashes, store: store)
        }
        return report
    }

    // MARK: Steps

    private func finishLeftovers() async throws(ContainerProtocolError) {
        let mine = try await store.run("read chunks left being deleted", timeout: longTimeout) { [rowID] client in
            try await Self.hashes(
                try await client.query(
                    """
                    SELECT hash FROM syncfs_chunks
                    WHERE container = \(rowID) AND state = \(PostgresChunkClaim.beingDeleted)
                    """))
        }
        _ = try await PostgresSweep.sweep(mine, store: store)
        _ = try await PostgresSweep.sweep(try await PostgresSweep.stale(now: now, store: store), store: store)
    }

    /// Step 2: how many versions were (would be) pruned and tombstones purged.
    private func prune(dryRun: Bool) async throws(ContainerProtocolError) -> (Int, Int) {
        let (versions, cutoff) = (Int64(policy.versions), cutoff)
        let statements: [PostgresQuery] =
            dryRun
            ? [
                """
                SELECT count(*) FROM (
                    SELECT replaced_at, row_number() OVER (PARTITION BY file_id ORDER BY version DESC) - 1 AS rank
                    FROM syncfs_versions WHERE container = \(rowID)) AS r
                WHERE r.rank >= \(versions) AND r.replaced_at <= \(cutoff)
                """,
                """
                SELECT count(*) FROM syncfs_entries
                WHERE container = \(rowID) AND deleted AND NOT purged
                    AND GREATEST(committed_at, (SELECT history_since FROM syncfs_containers WHERE id = \(rowID))) <= \(cutoff)
                """,
            ]
            : [
                """
                WITH ranked AS (
                    SELECT file_id, version, replaced_at,
                        row_number() OVER (PARTITION BY file_id ORDER BY version DESC) - 1 AS rank
                    FROM syncfs_versions WHERE container = \(rowID)),
                gone AS (
                    DELETE FROM syncfs_versions v USING ranked r
                    WHERE v.container = \(rowID) AND v.file_id = r.file_id AND v.version = r.version
                        AND r.rank >= \(versions) AND r.replaced_at <= \(cutoff)
                    RETURNING 1)
                SELECT count(*) FROM gone
                """,
                """
                WITH gone AS (
                    UPDATE syncfs_entries SET purged = true
                    WHERE container = \(rowID) AND deleted AND NOT purged
                    AND GREATEST(committed_at, (SELECT history_since FROM syncfs_containers WHERE id = \(rowID))) <= \(cutoff)
                    RETURNING 1)
                SELECT count(*) FROM gone
                """,
            ]
        return try await store.run("prune the history", timeout: longTimeout) { client in
            var counts: [Int] = []
            for statement in statements {
                for try await count in try await client.query(statement).decode(Int64.self) {
                    counts.append(Int(count))
                }
            }
            guard counts.count == 2 else { throw ContainerProtocolError.storageFailure("pruning answered nothing") }
            return (counts[0], counts[1])
        }
    }

    /// Step 3.
    private func readSnapshot(dryRun: Bool) async throws(ContainerProtocolError) -> Snapshot {
        try await store.run("read what the container references", timeout: longTimeout) {
            [rowID, policy, cutoff, logger] client in
            try await client.withConnection { connection in
                try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
                do {
                    var snapshot = Snapshot()
                    for try await version in try await connection.query(
                        "SELECT version FROM syncfs_containers WHERE id = \(rowID)", logger: logger
                    ).decode(Int64.self) {
                        snapshot.version = version
                    }
                    // After a real pruning, every version still stored is kept (a version's rank
                    // may have grown since: it is pruned by the next collection, not orphaned by
                    // this one); a dry run applies the policy's predicates instead.
                    let references: PostgresQuery =
                        dryRun
                        ? """
                        SELECT manifest FROM syncfs_entries
                        WHERE container = \(rowID) AND manifest IS NOT NULL AND NOT purged
                            AND NOT (deleted AND committed_at <= \(cutoff))
                        UNION ALL
                        SELECT manifest FROM (
                            SELECT manifest, replaced_at,
                                row_number() OVER (PARTITION BY file_id ORDER BY version DESC) - 1 AS rank
                            FROM syncfs_versions WHERE container = \(rowID)) AS v
                        WHERE manifest IS NOT NULL
                            AND (rank < \(Int64(policy.versions)) OR replaced_at > \(cutoff))
                        """
                        : """
                        SELECT manifest FROM syncfs_entries
                        WHERE container = \(rowID) AND manifest IS NOT NULL AND NOT purged
                        UNION ALL
                        SELECT manifest FROM syncfs_versions WHERE container = \(rowID) AND manifest IS NOT NULL
                        """
                    try await Self.addReferences(
                        try await connection.query(references, logger: logger), to: &snapshot.referenced)
                    let rows = try await connection.query(
                        """
                        SELECT hash, stored_at, stored_length FROM syncfs_chunks
                        WHERE container = \(rowID) AND state <> \(PostgresChunkClaim.beingDeleted)
                        """, logger: logger)
                    for try await (hex, storedAt, length) in rows.decode((String, Int64, Int64).self) {
                        snapshot.examined += 1
                        guard let hash = ChunkHash(hex: hex) else {
                            throw ContainerProtocolError.storageFailure("a stored chunk hash is damaged")
                        }
                        if !snapshot.referenced.contains(hash) {
                            snapshot.candidates.append(Candidate(hash: hash, storedAt: storedAt, length: length))
                        }
                    }
                    try await connection.query("COMMIT", logger: logger)
                    return snapshot
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    /// Step 4 for one batch: revives what commits since the snapshot reference, marks the rest
    /// stored before the grace cutoff.
    private func mark(_ batch: [Candidate], snapshot: inout Snapshot) async throws(ContainerProtocolError) -> (
        hashes: [ChunkHash], bytes: Int64, revived: Int
    ) {
        try await catchUp(&snapshot)
        let seen = snapshot.version
        let referenced = snapshot.referenced
        let (counter, added, hashes, bytes) = try await store.run("mark unreferenced chunks", timeout: longTimeout) {
            [rowID, graceCutoff, logger] client in
            try await client.withTransaction(logger: logger) { connection in
                var counter: Int64?
                for try await version in try await connection.query(
                    "SELECT version FROM syncfs_containers WHERE id = \(rowID) FOR UPDATE", logger: logger
                ).decode(Int64.self) {
                    counter = version
                }
                guard let counter else {
                    throw ContainerProtocolError.unavailable("the container is no longer in the database")
                }
                var added = Set<ChunkHash>()
                if counter > seen {
                    try await Self.addReferences(
                        try await connection.query(Self.committed(after: seen, container: rowID), logger: logger),
                        to: &added)
                }
                let doomed = batch.filter { !referenced.contains($0.hash) && !added.contains($0.hash) }.map(\.hash.hex)
                let rows = try await connection.query(
                    """
                    UPDATE syncfs_chunks SET state = \(PostgresChunkClaim.beingDeleted)
                    WHERE container = \(rowID) AND hash = ANY(\(doomed)) AND stored_at < \(graceCutoff)
                        AND state <> \(PostgresChunkClaim.beingDeleted)
                    RETURNING hash, stored_length
                    """, logger: logger)
                var hashes: [ChunkHash] = []
                var bytes: Int64 = 0
                for try await (hex, length) in rows.decode((String, Int64).self) {
                    if let hash = ChunkHash(hex: hex) { hashes.append(hash) }
                    bytes += length
                }
                return (counter, added, hashes, bytes)
            }
        }
        snapshot.version = max(snapshot.version, counter)
        snapshot.referenced.formUnion(added)
        // Every candidate was unreferenced in the snapshot: any reference now revived it.
        let revived = batch.count(where: { added.contains($0.hash) || referenced.contains($0.hash) })
        return (hashes, bytes, revived)
    }

    /// The manifests of the versions committed after `seen` (current or superseded since).
    static func committed(after seen: Int64, container rowID: Int64) -> PostgresQuery {
        """
        SELECT manifest FROM syncfs_entries
        WHERE container = \(rowID) AND version > \(seen) AND manifest IS NOT NULL
        UNION ALL
        SELECT manifest FROM syncfs_versions
        WHERE container = \(rowID) AND version > \(seen) AND manifest IS NOT NULL
        """
    }

    /// Before a batch's locked step, without the lock: the references committed since the
    /// snapshot's version, up to the counter read first (every version up to it is committed:
    /// the counter moves in the transaction that writes the version), so the locked step reads
    /// only the commits of the last moments and holds the container's lock briefly.
    private func catchUp(_ snapshot: inout Snapshot) async throws(ContainerProtocolError) {
        let seen = snapshot.version
        let (counter, added) = try await store.run("read recent commits", timeout: longTimeout) {
            [rowID] client -> (Int64, Set<ChunkHash>) in
            var counter = seen
            for try await version in try await client.query(
                "SELECT version FROM syncfs_containers WHERE id = \(rowID)"
            ).decode(Int64.self) {
                counter = version
            }
            var added = Set<ChunkHash>()
            if counter > seen {
                try await Self.addReferences(
                    try await client.query(Self.committed(after: seen, container: rowID)), to: &added)
            }
            return (counter, added)
        }
        snapshot.referenced.formUnion(added)
        snapshot.version = max(seen, counter)
    }

    /// Adds the chunk hashes of the manifests in `rows` (one `bytea` cell each) to `set`.
    static func addReferences(_ rows: PostgresRowSequence, to set: inout Set<ChunkHash>) async throws {
        for try await manifest in rows.decode(ByteBuffer.self) {
            for reference in try LocalEntryEncoding.decodeManifest(PostgresEntryRow.bytes(manifest)) {
                set.insert(reference.hash)
            }
        }
    }

    static func hashes(_ rows: PostgresRowSequence) async throws -> [ChunkHash] {
        var hashes: [ChunkHash] = []
        for try await hex in rows.decode(String.self) {
            guard let hash = ChunkHash(hex: hex) else {
                throw ContainerProtocolError.storageFailure("a stored chunk hash is damaged")
            }
            hashes.append(hash)
        }
        return hashes
    }
}
