import PostgresNIO
import SyncBackend

/// Retention, storage accounting and garbage collection of a `PostgresContainer`
/// (`CollectableContainer`; the collection itself: `PostgresCollection`). The policy is kept in
/// the container's row of `syncfs_containers` (30 days by default).
extension PostgresContainer: CollectableContainer {
    public func retention() async throws(ContainerProtocolError) -> RetentionPolicy {
        let found = try await store.run("read the retention policy") { [rowID] client -> RetentionPolicy? in
            let rows = try await client.query(
                "SELECT retention_days, retention_versions FROM syncfs_containers WHERE id = \(rowID)")
            for try await (days, versions) in rows.decode((Int32, Int32).self) {
                return RetentionPolicy(days: Int(days), versions: Int(versions))
            }
            return nil
        }
        guard let found else { throw .unavailable("the container is no longer in the database") }
        return found
    }

    public func setRetention(_ policy: RetentionPolicy) async throws(ContainerProtocolError) {
        if let problem = policy.problem { throw .invalidRequest(problem) }
        let updated = try await store.run("set the retention policy") { [rowID] client in
            let rows = try await client.query(
                """
                UPDATE syncfs_containers
                SET retention_days = \(Int32(policy.days)), retention_versions = \(Int32(policy.versions))
                WHERE id = \(rowID) RETURNING id
                """)
            for try await _ in rows.decode(Int64.self) { return true }
            return false
        }
        guard updated else { throw .unavailable("the container is no longer in the database") }
    }

    public func collectGarbage(_ options: CollectionOptions) async throws(ContainerProtocolError)
        -> CollectionReport
    {
        let policy: RetentionPolicy
        if let given = options.retention { policy = given } else { policy = try await retention() }
        if let problem = policy.problem { throw .invalidRequest(problem) }
        guard options.grace >= .zero else { throw .invalidRequest("the grace period cannot be negative") }
        let now: Int64
        if let given = options.now { now = given } else { now = try await store.databaseNow() }
        return try await PostgresCollection(container: self, policy: policy, now: now, grace: options.grace)
            .run(dryRun: options.dryRun)
    }

    /// One statement, so one consistent snapshot. Chunks count live rows only; `stored_length`
    /// is 0 for chunks stored before schema 4 (their encoded size was not recorded).
    public func storageStats() async throws(ContainerProtocolError) -> StorageStats {
        let found = try await store.run("count the container's storage") { [rowID] client -> StorageStats? in
            let rows = try await client.query(
                """
                SELECT
                    (SELECT count(*) FROM syncfs_entries WHERE container = \(rowID) AND NOT deleted),
                    (SELECT count(*) FROM syncfs_entries WHERE container = \(rowID) AND deleted AND NOT purged),
                    (SELECT count(*) FROM syncfs_entries WHERE container = \(rowID) AND deleted),
                    (SELECT count(*) FROM syncfs_versions WHERE container = \(rowID)),
                    c.held, c.stored, c.plain,
                    (SELECT coalesce(sum(size), 0)::bigint FROM syncfs_entries
                        WHERE container = \(rowID) AND NOT deleted AND kind = \(Int16(NodeKind.file.rawValue)))
                FROM (SELECT count(*) AS held, coalesce(sum(stored_length), 0)::bigint AS stored,
                        coalesce(sum(plain_length), 0)::bigint AS plain
                    FROM syncfs_chunks WHERE container = \(rowID) AND state = \(PostgresChunkClaim.live)) AS c
                WHERE EXISTS (SELECT 1 FROM syncfs_containers WHERE id = \(rowID))
                """)
            for try await row in rows {
                let cells = row.makeRandomAccess()
                var stats = StorageStats()
                stats.liveEntries = Int(try cells[0].decode(Int64.self))
                stats.trashedEntries = Int(try cells[1].decode(Int64.self))
                stats.tombstones = Int(try cells[2].decode(Int64.self))
                stats.keptVersions = Int(try cells[3].decode(Int64.self))
                stats.chunks = Int(try cells[4].decode(Int64.self))
                stats.storedBytes = try cells[5].decode(Int64.self)
                stats.chunkPlainBytes = try cells[6].decode(Int64.self)
                stats.logicalBytes = try cells[7].decode(Int64.self)
                return stats
            }
            return nil
        }
        guard let found else { throw .unavailable("the container is no longer in the database") }
        return found
    }
}

extension PostgresStore {
    /// The database's clock, in nanoseconds since the epoch (`syncfs_now_ns()`: the clock of
    /// `committed_at` and `stored_at`).
    func databaseNow() async throws(ContainerProtocolError) -> Int64 {
        try await run("read the database's clock") { client in
            for try await now in try await client.query("SELECT syncfs_now_ns()").decode(Int64.self) { return now }
            throw ContainerProtocolError.storageFailure("the database's clock answered nothing")
        }
    }
}
