import PostgresNIO
import SyncBackend

/// Failed attempts (`syncfs_failures`) and the audit log (`syncfs_audit`), with
/// `PostgresAccessTables`' contract.
extension PostgresAccessTables {
    // MARK: Failed attempts

    /// Records a failed attempt under `key` at `time`.
    public func noteFailure(key: String, at time: Int64) async throws(ContainerProtocolError) {
        try await store.run("record a failed attempt") { client in
            _ = try await client.query("INSERT INTO syncfs_failures (key, time) VALUES (\(key), \(time))")
        }
    }

    /// The failed attempts under `key` at or after `time`.
    public func failures(key: String, since time: Int64) async throws(ContainerProtocolError) -> Int {
        try await store.run("count failed attempts") { client in
            let rows = try await client.query(
                "SELECT count(*) FROM syncfs_failures WHERE key = \(key) AND time >= \(time)")
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }

    /// Deletes the failures under `key` (none with nil) and every failure older than `before`.
    public func clearFailures(key: String?, before: Int64) async throws(ContainerProtocolError) {
        try await store.run("clear failed attempts") { client in
            _ = try await client.query("DELETE FROM syncfs_failures WHERE key = \(key) OR time < \(before)")
        }
    }

    // MARK: Audit log

    /// Appends one line.
    public func appendAudit(_ line: PostgresAuditRow) async throws(ContainerProtocolError) {
        try await store.run("append to the audit log") { client in
            _ = try await client.query(
                """
                INSERT INTO syncfs_audit (time, container, actor, address, action, target, result)
                VALUES (\(line.time), \(line.container), \(line.actor), \(line.address), \(line.action),
                    \(line.target), \(line.result))
                """)
        }
    }

    /// The lines at or after `since`, of `container` if given (every line with nil), oldest first
    /// (in the order appended within a second), at most `limit`.
    public func audit(container: String?, since: Int64, limit: Int) async throws(ContainerProtocolError)
        -> [PostgresAuditRow]
    {
        let limit = Int64(max(0, limit))
        return try await store.run("read the audit log") { client in
            let rows: PostgresRowSequence
            if let container {
                rows = try await client.query(
                    """
                    SELECT time, container, actor, address, action, target, result FROM syncfs_audit
                    WHERE container = \(container) AND time >= \(since) ORDER BY time, seq LIMIT \(limit)
                    """)
            } else {
                rows = try await client.query(
                    """
                    SELECT time, container, actor, address, action, target, result FROM syncfs_audit
                    WHERE time >= \(since) ORDER BY time, seq LIMIT \(limit)
                    """)
            }
            var found: [PostgresAuditRow] = []
            for try await (time, container, actor, address, action, target, result) in rows.decode(
                (Int64, String?, String, String?, String, String, String).self)
            {
                found.append(
                    PostgresAuditRow(
                        time: time, container: container, actor: actor, address: address, action: action,
                        target: target, result: result))
            }
            return found
        }
    }

    /// Deletes the lines older than `before`; how many.
    public func pruneAudit(before: Int64) async throws(ContainerProtocolError) -> Int {
        try await store.run("prune the audit log") { client in
            let rows = try await client.query(
                """
                WITH gone AS (DELETE FROM syncfs_audit WHERE time < \(before) RETURNING 1)
                SELECT count(*) FROM gone
                """)
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }
}
