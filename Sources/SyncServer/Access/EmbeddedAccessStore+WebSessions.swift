import SQLiteSupport
import SyncBackend

/// The web page's sessions in `tokens.db` (`web_sessions`).
extension EmbeddedAccessStore {
    static let webSessionColumns = "id, user, created, last_seen, expires, revoked, address, agent"

    public func insertWebSession(_ session: WebSessionRecord, digest: String) async throws(SyncServerError) -> Bool {
        try await run(writing: true) { connection in
            let taken = try connection.statement("SELECT 1 FROM web_sessions WHERE id = ? OR digest = ?")
            defer { taken.reset() }
            taken.bind(1, session.id)
            taken.bind(2, digest)
            if try taken.step() { return false }
            let insert = try connection.statement(
                "INSERT INTO web_sessions (\(Self.webSessionColumns), digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
            insert.bind(1, session.id)
            insert.bind(2, session.user)
            insert.bind(3, session.created)
            insert.bind(4, session.lastSeen)
            insert.bind(5, session.expires)
            insert.bindOptional(6, session.revoked)
            insert.bindOptional(7, session.address)
            insert.bind(8, session.agent)
            insert.bind(9, digest)
            try insert.run()
            return true
        }
    }

    public func webSession(digest: String) async throws(SyncServerError) -> WebSessionRecord? {
        try await run(writing: false) { connection in
            let find = try connection.statement("SELECT \(Self.webSessionColumns) FROM web_sessions WHERE digest = ?")
            defer { find.reset() }
            find.bind(1, digest)
            return try find.step() ? Self.webSessionRecord(find) : nil
        }
    }

    public func webSessions(user: String, limit: Int) async throws(SyncServerError) -> [WebSessionRecord] {
        try await run(writing: false) { connection in
            let list = try connection.statement(
                """
                SELECT \(Self.webSessionColumns) FROM web_sessions WHERE user = ?
                ORDER BY created DESC, id LIMIT ?
                """)
            defer { list.reset() }
            list.bind(1, user)
            list.bind(2, Int64(limit))
            var found: [WebSessionRecord] = []
            while try list.step() { found.append(Self.webSessionRecord(list)) }
            return found
        }
    }

    public func revokeWebSession(id: String, user: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await run(writing: true) { connection -> Bool? in
            let find = try connection.statement("SELECT revoked FROM web_sessions WHERE id = ? AND user = ?")
            defer { find.reset() }
            find.bind(1, id)
            find.bind(2, user)
            guard try find.step() else { return nil }
            guard find.isNull(0) else { return false }
            find.reset()
            let update = try connection.statement("UPDATE web_sessions SET revoked = ? WHERE id = ?")
            update.bind(1, time)
            update.bind(2, id)
            try update.run()
            return true
        }
    }

    public func revokeWebSessions(user: String, at time: Int64) async throws(SyncServerError) -> Int {
        try await run(writing: true) { connection in
            let update = try connection.statement(
                "UPDATE web_sessions SET revoked = ? WHERE user = ? AND revoked IS NULL RETURNING id")
            defer { update.reset() }
            update.bind(1, time)
            update.bind(2, user)
            var count = 0
            while try update.step() { count += 1 }
            return count
        }
    }

    public func touchWebSession(id: String, at time: Int64, address: String?) async throws(SyncServerError) {
        try await run(writing: true) { connection in
            let update = try connection.statement("UPDATE web_sessions SET last_seen = ?, address = ? WHERE id = ?")
            update.bind(1, time)
            update.bindOptional(2, address)
            update.bind(3, id)
            try update.run()
        }
    }

    private static func webSessionRecord(_ row: SQLiteStatement) -> WebSessionRecord {
        WebSessionRecord(
            id: row.text(0), user: row.text(1), created: row.int64(2), lastSeen: row.int64(3), expires: row.int64(4),
            revoked: row.optionalInt64(5), address: row.optionalText(6), agent: row.text(7))
    }
}
