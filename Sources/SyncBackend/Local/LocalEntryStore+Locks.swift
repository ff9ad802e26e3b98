import SQLiteSupport

/// The locks of a local container, in `container.db`'s `locks` table (doc/FORMATS.md): the store
/// every mount of the container on this machine shares. Each call is one `BEGIN IMMEDIATE`
/// transaction (so calls of all processes are serialised) that loads the rows it concerns,
/// applies `LockTable` and writes back what changed; a claim first deletes every expired lease of
/// the container, so the table stays bounded. Times are the calling process's real-time clock.
extension LocalEntryStore {
    func lock(_ claim: LockClaim, leaseSeconds: Int) throws(ContainerProtocolError) -> LockAnswer {
        try withConnection { connection in
            try connection.transaction { () throws -> LockAnswer in
                let now = WallClock.nanoseconds()
                let original = LockTable(try Self.locks(in: connection, where: "file_id = ?", claim.fileID.hex))
                try Self.deleteExpired(in: connection, now: now)
                // Every row left is live: the counts are of every row (by index), less this file's.
                let here = original.locks.filter { $0.isLive(at: now) }
                let elsewhere = LockTable.Elsewhere(
                    sessionLocks: try Self.count(in: connection, where: "session = ?", [.text(claim.session.hex)])
                        - here.count(where: { $0.session == claim.session }),
                    containerLocks: try Self.count(in: connection, where: "1", []) - here.count)
                var table = original
                let answer = try table.lock(claim, leaseSeconds: leaseSeconds, now: now, elsewhere: elsewhere)
                try Self.write(table.difference(from: original), in: connection)
                return answer
            }
        }
    }

    func unlock(_ release: LockRelease) throws(ContainerProtocolError) {
        try withConnection { connection in
            try connection.transaction { () throws in
                let original = LockTable(try Self.locks(in: connection, where: "file_id = ?", release.fileID.hex))
                var table = original
                try table.unlock(release, now: WallClock.nanoseconds())
                try Self.write(table.difference(from: original), in: connection)
            }
        }
    }

    func renewLocks(session: LockSession, leaseSeconds: Int) throws(ContainerProtocolError) -> [HeldLock] {
        try withConnection { connection in
            try connection.transaction { () throws -> [HeldLock] in
                let original = LockTable(try Self.locks(in: connection, where: "session = ?", session.hex))
                var table = original
                let held = try table.renew(session: session, leaseSeconds: leaseSeconds, now: WallClock.nanoseconds())
                try Self.write(table.difference(from: original), in: connection)
                return held
            }
        }
    }

    func releaseLocks(session: LockSession) throws(ContainerProtocolError) {
        try withConnection { connection in
            let statement = try connection.statement("DELETE FROM locks WHERE session = ?")
            defer { statement.reset() }
            statement.bind(1, session.hex)
            try statement.run()
        }
    }

    func locks(on fileID: FileID) throws(ContainerProtocolError) -> [HeldLock] {
        try withConnection { connection in
            LockTable(try Self.locks(in: connection, where: "file_id = ?", fileID.hex))
                .live(on: fileID, now: WallClock.nanoseconds())
        }
    }

    private enum Value {
        case text(String)
        case integer(Int64)
    }

    private static func locks(in connection: SQLiteConnection, where condition: String, _ key: String) throws
        -> [HeldLock]
    {
        let statement = try connection.statement(
            """
            SELECT file_id, kind, session, owner, range_start, range_end, mode, holder, expires_at
            FROM locks WHERE \(condition)
            """)
        defer { statement.reset() }
        statement.bind(1, key)
        var locks: [HeldLock] = []
        while try statement.step() {
            let row = LockRow(
                fileID: statement.text(0), kind: statement.text(1), session: statement.text(2),
                owner: statement.int64(3), rangeStart: statement.int64(4), rangeEnd: statement.int64(5),
                mode: statement.text(6), holder: statement.text(7), expiresAt: statement.int64(8))
            locks.append(try row.lock())
        }
        return locks
    }

    /// Deletes every lease of the container that expired at `now` (by the expiry index): the
    /// table holds no more rows than `LockLimits.maxLocksPerContainer` live locks, whoever left
    /// them to expire.
    private static func deleteExpired(in connection: SQLiteConnection, now: Int64) throws {
        let statement = try connection.statement("DELETE FROM locks WHERE expires_at <= ?")
        defer { statement.reset() }
        statement.bind(1, now)
        try statement.run()
    }

    private static func count(in connection: SQLiteConnection, where condition: String, _ values: [Value]) throws
        -> Int
    {
        let statement = try connection.statement("SELECT count(*) FROM locks WHERE \(condition)")
        defer { statement.reset() }
        for (index, value) in values.enumerated() {
            switch value {
            case .text(let text): statement.bind(Int32(index + 1), text)
            case .integer(let number): statement.bind(Int32(index + 1), number)
            }
        }
        _ = try statement.step()
        return Int(statement.int64(0))
    }

    /// Deletes the removed rows, then inserts the added ones.
    private static func write(
        _ difference: (removed: [HeldLock], added: [HeldLock]), in connection: SQLiteConnection
    ) throws {
        let delete = try connection.statement(
            "DELETE FROM locks WHERE file_id = ? AND kind = ? AND session = ? AND owner = ? AND range_start = ?")
        for lock in difference.removed {
            let row = LockRow(lock)
            delete.bind(1, row.fileID)
            delete.bind(2, row.kind)
            delete.bind(3, row.session)
            delete.bind(4, row.owner)
            delete.bind(5, row.rangeStart)
            try delete.run()
            delete.reset()
        }
        let insert = try connection.statement(
            """
            INSERT INTO locks (file_id, kind, session, owner, range_start, range_end, mode, holder, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for lock in difference.added {
            let row = LockRow(lock)
            insert.bind(1, row.fileID)
            insert.bind(2, row.kind)
            insert.bind(3, row.session)
            insert.bind(4, row.owner)
            insert.bind(5, row.rangeStart)
            insert.bind(6, row.rangeEnd)
            insert.bind(7, row.mode)
            insert.bind(8, row.holder)
            insert.bind(9, row.expiresAt)
            try insert.run()
            insert.reset()
        }
    }
}
