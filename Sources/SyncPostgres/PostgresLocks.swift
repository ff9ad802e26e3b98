import Logging
import PostgresNIO
import SyncBackend

/// The cross-mount locks of a `PostgresContainer` (`ContainerLocks`), in `syncfs_locks`
/// (`PostgresLocksSchema`), shared by every server on the database. Times are the database's
/// clock (`syncfs_now_ns()`), so servers with different clocks agree on every lease.
///
/// - `lock` and `unlock` are one transaction each: the file's advisory lock
///   (`pg_advisory_xact_lock` on the pair `hashtext('syncfs_locks')`, `hashtext('<container
///   row>/<file ID>')`) serialises the calls on one file, its rows are read `FOR UPDATE`, the
///   shared `LockTable` decides, and what changed is written back. A claim also deletes every
///   expired lease of the container (`deleteExpired`), so the table stays within the limits.
/// - `renewLocks` and `releaseLocks` lock the session's rows `FOR UPDATE` first, then update or
///   delete them. Every transaction locks rows in the order (file, kind, session, owner, range
///   start), so none waits for another in a cycle.
extension PostgresContainer: ContainerLocks {
    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        let lease = try LockLimits.lease(leaseSeconds)
        let claim = try LockTable.checked(claim)
        return try await store.run("lock \(claim.fileID)") { [rowID, store] client in
            let logger = store.options.logger
            return try await client.withTransaction(logger: logger) { connection in
                let rows = PostgresLockRows(container: rowID, connection: connection, logger: logger)
                let now = try await rows.lockFile(claim.fileID)
                let original = LockTable(try await rows.locks(on: claim.fileID))
                try await rows.deleteExpired(now: now)
                var table = original
                let answer = try table.lock(
                    claim, leaseSeconds: lease, now: now,
                    elsewhere: try await rows.elsewhere(than: original, session: claim.session, now: now))
                try await rows.write(table.difference(from: original))
                return answer
            }
        }
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        _ = try LockTable.checkedRange(release.range, kind: release.kind)
        try await store.run("unlock \(release.fileID)") { [rowID, store] client in
            let logger = store.options.logger
            try await client.withTransaction(logger: logger) { connection in
                let rows = PostgresLockRows(container: rowID, connection: connection, logger: logger)
                let now = try await rows.lockFile(release.fileID)
                let original = LockTable(try await rows.locks(on: release.fileID))
                var table = original
                try table.unlock(release, now: now)
                try await rows.write(table.difference(from: original))
            }
        }
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        let lease = try LockLimits.lease(leaseSeconds)
        return try await store.run("renew the locks of session \(session)") { [rowID, store] client in
            let logger = store.options.logger
            return try await client.withTransaction(logger: logger) { connection in
                let rows = PostgresLockRows(container: rowID, connection: connection, logger: logger)
                let now = try await rows.now()
                var table = LockTable(try await rows.locks(of: session))
                let held = try table.renew(session: session, leaseSeconds: lease, now: now)
                try await rows.renew(session, now: now, to: LockTable.expiry(now: now, leaseSeconds: lease))
                return held
            }
        }
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await store.run("release the locks of session \(session)") { [rowID, store] client in
            let logger = store.options.logger
            try await client.withTransaction(logger: logger) { connection in
                let rows = PostgresLockRows(container: rowID, connection: connection, logger: logger)
                _ = try await rows.locks(of: session)
                try await rows.release(session)
            }
        }
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try await store.run("read the locks on \(fileID)") { [rowID, store] client in
            try await client.withConnection { connection in
                let rows = PostgresLockRows(container: rowID, connection: connection, logger: store.options.logger)
                let now = try await rows.now()
                return LockTable(try await rows.locks(on: fileID, forUpdate: false)).live(on: fileID, now: now)
            }
        }
    }
}

/// The statements on one container's `syncfs_locks` rows, on one connection (inside the
/// caller's transaction). Every value is a bound parameter.
struct PostgresLockRows {
    let container: Int64
    let connection: PostgresConnection
    let logger: Logger

    private static let columns = "file_id, kind, session, owner, range_start, range_end, mode, holder, expires_at"

    /// Takes the file's advisory lock for the transaction; answers the database's clock after it.
    func lockFile(_ fileID: FileID) async throws -> Int64 {
        let key = "\(container)/\(fileID.hex)"
        for try await _ in try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtext('syncfs_locks'), hashtext(\(key)))::text", logger: logger)
        {}
        return try await now()
    }

    /// The database's clock, in nanoseconds since the epoch.
    func now() async throws -> Int64 {
        for try await now in try await connection.query("SELECT syncfs_now_ns()", logger: logger).decode(Int64.self) {
            return now
        }
        throw ContainerProtocolError.storageFailure("PostgreSQL answered no time")
    }

    /// Every row of the file (expired ones too), locked for update unless `forUpdate` is false.
    func locks(on fileID: FileID, forUpdate: Bool = true) async throws -> [HeldLock] {
        let query: PostgresQuery =
            forUpdate
            ? """
            SELECT \(unescaped: Self.columns) FROM syncfs_locks WHERE container = \(container) AND file_id = \(fileID.hex)
            ORDER BY kind, session, owner, range_start FOR UPDATE
            """
            : """
            SELECT \(unescaped: Self.columns) FROM syncfs_locks WHERE container = \(container) AND file_id = \(fileID.hex)
            """
        return try await decode(try await connection.query(query, logger: logger))
    }

    /// Every row of the session (expired ones too), locked for update.
    func locks(of session: LockSession) async throws -> [HeldLock] {
        try await decode(
            try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM syncfs_locks WHERE container = \(container) AND session = \(session.hex)
                ORDER BY file_id, kind, owner, range_start FOR UPDATE
                """, logger: logger))
    }

    /// Deletes the container's leases that expired at `now` (by the expiry index), but for rows
    /// another transaction holds (`SKIP LOCKED`: it never waits, so it adds no wait to the lock
    /// order; a skipped row is counted until its holder or the next claim deletes it).
    func deleteExpired(now: Int64) async throws {
        try await connection.query(
            """
            DELETE FROM syncfs_locks WHERE ctid IN (
                SELECT ctid FROM syncfs_locks WHERE container = \(container) AND expires_at <= \(now)
                FOR UPDATE SKIP LOCKED)
            """, logger: logger)
    }

    /// The locks on other files than `file`'s (after `deleteExpired`, every row counts): the
    /// session's and everyone's, by index, less the file's live ones.
    func elsewhere(than file: LockTable, session: LockSession, now: Int64) async throws -> LockTable.Elsewhere {
        let here = file.locks.filter { $0.isLive(at: now) }
        let rows = try await connection.query(
            """
            SELECT (SELECT count(*) FROM syncfs_locks WHERE container = \(container) AND session = \(session.hex)),
                (SELECT count(*) FROM syncfs_locks WHERE container = \(container))
            """, logger: logger)
        for try await (sessionLocks, containerLocks) in rows.decode((Int64, Int64).self) {
            return LockTable.Elsewhere(
                sessionLocks: max(0, Int(sessionLocks) - here.count(where: { $0.session == session })),
                containerLocks: max(0, Int(containerLocks) - here.count))
        }
        return .none
    }

    /// Deletes the removed rows, then inserts the added ones.
    func write(_ difference: (removed: [HeldLock], added: [HeldLock])) async throws {
        for lock in difference.removed {
            let row = LockRow(lock)
            try await connection.query(
                """
                DELETE FROM syncfs_locks WHERE container = \(container) AND file_id = \(row.fileID)
                AND kind = \(row.kind) AND session = \(row.session) AND owner = \(row.owner)
                AND range_start = \(row.rangeStart)
                """, logger: logger)
        }
        for lock in difference.added {
            let row = LockRow(lock)
            try await connection.query(
                """
                INSERT INTO syncfs_locks (container, \(unescaped: Self.columns))
                VALUES (\(container), \(row.fileID), \(row.kind), \(row.session), \(row.owner), \(row.rangeStart),
                    \(row.rangeEnd), \(row.mode), \(row.holder), \(row.expiresAt))
                """, logger: logger)
        }
    }

    /// Drops the session's expired rows and extends the others to `expiresAt`.
    func renew(_ session: LockSession, now: Int64, to expiresAt: Int64) async throws {
        try await connection.query(
            """
            DELETE FROM syncfs_locks
            WHERE container = \(container) AND session = \(session.hex) AND expires_at <= \(now)
            """, logger: logger)
        try await connection.query(
            """
            UPDATE syncfs_locks SET expires_at = \(expiresAt)
            WHERE container = \(container) AND session = \(session.hex)
            """, logger: logger)
    }

    func release(_ session: LockSession) async throws {
        try await connection.query(
            "DELETE FROM syncfs_locks WHERE container = \(container) AND session = \(session.hex)", logger: logger)
    }

    private func decode(_ rows: PostgresRowSequence) async throws -> [HeldLock] {
        var locks: [HeldLock] = []
        for try await row in rows {
            let cells = row.makeRandomAccess()
            let stored = LockRow(
                fileID: try cells[0].decode(String.self), kind: try cells[1].decode(String.self),
                session: try cells[2].decode(String.self), owner: try cells[3].decode(Int64.self),
                rangeStart: try cells[4].decode(Int64.self), rangeEnd: try cells[5].decode(Int64.self),
                mode: try cells[6].decode(String.self), holder: try cells[7].decode(String.self),
                expiresAt: try cells[8].decode(Int64.self))
            locks.append(try stored.lock())
        }
        return locks
    }
}
