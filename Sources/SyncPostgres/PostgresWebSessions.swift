import PostgresNIO
import SyncBackend

/// A row of `syncfs_web_sessions`: one signed-in browser of the web page.
public struct PostgresWebSessionRow: Sendable, Equatable {
    public var id: String
    public var user: String
    public var created: Int64
    public var lastSeen: Int64
    public var expires: Int64
    public var revoked: Int64?
    public var address: String?
    public var agent: String

    public init(
        id: String, user: String, created: Int64, lastSeen: Int64, expires: Int64, revoked: Int64?, address: String?,
        agent: String
    ) {
        self.id = id
        self.user = user
        self.created = created
        self.lastSeen = lastSeen
        self.expires = expires
        self.revoked = revoked
        self.address = address
        self.agent = agent
    }
}

/// The web page's sessions (`syncfs_web_sessions`, schema 8), with `PostgresAccessTables`' contract.
extension PostgresAccessTables {
    /// The columns `webSessionRows` decodes, in its order (a constant, spliced unescaped).
    private static let webSessionColumns = "id, user_name, created, last_seen, expires, revoked, address, agent"

    /// Inserts a session with this digest of its cookie's secret; false if its ID or digest is taken.
    public func insertWebSession(
        _ session: PostgresWebSessionRow, digest: String
    ) async throws(ContainerProtocolError) -> Bool {
        try await store.run("record a web session") { client in
            let rows = try await client.query(
                """
                INSERT INTO syncfs_web_sessions (id, digest, user_name, created, last_seen, expires, revoked,
                    address, agent)
                VALUES (\(session.id), \(digest), \(session.user), \(session.created), \(session.lastSeen),
                    \(session.expires), \(session.revoked), \(session.address), \(session.agent))
                ON CONFLICT DO NOTHING RETURNING id
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    /// The session with this digest, revoked or not.
    public func webSession(digest: String) async throws(ContainerProtocolError) -> PostgresWebSessionRow? {
        try await store.run("look up a web session") { client in
            try await Self.webSessionRows(
                client.query(
                    "SELECT \(unescaped: Self.webSessionColumns) FROM syncfs_web_sessions WHERE digest = \(digest)")
            ).first
        }
    }

    /// The sessions of `user`, newest first, at most `limit`.
    public func webSessions(user: String, limit: Int) async throws(ContainerProtocolError) -> [PostgresWebSessionRow] {
        try await store.run("list web sessions") { client in
            try await Self.webSessionRows(
                client.query(
                    """
                    SELECT \(unescaped: Self.webSessionColumns) FROM syncfs_web_sessions
                    WHERE user_name = \(user) ORDER BY created DESC, id LIMIT \(Int64(limit))
                    """))
        }
    }

    /// Revokes session `id` of `user` at `time`: true if it was valid, false if revoked already,
    /// nil if `user` has no such session.
    public func revokeWebSession(
        id: String, user: String, at time: Int64
    ) async throws(ContainerProtocolError) -> Bool? {
        try await store.run("revoke a web session") { client -> Bool? in
            try await Self.firstBool(
                client.query(
                    """
                    WITH target AS (SELECT id, revoked FROM syncfs_web_sessions
                                    WHERE id = \(id) AND user_name = \(user) FOR UPDATE),
                         changed AS (UPDATE syncfs_web_sessions SET revoked = \(time)
                                     WHERE id IN (SELECT id FROM target WHERE revoked IS NULL) RETURNING id)
                    SELECT (SELECT count(*) FROM changed) > 0 FROM target
                    """))
        }
    }

    /// Revokes every valid session of `user` at `time`; how many.
    public func revokeWebSessions(user: String, at time: Int64) async throws(ContainerProtocolError) -> Int {
        try await store.run("revoke a user's web sessions") { client in
            let rows = try await client.query(
                """
                UPDATE syncfs_web_sessions SET revoked = \(time)
                WHERE user_name = \(user) AND revoked IS NULL RETURNING id
                """)
            var count = 0
            for try await _ in rows.decode(String.self) { count += 1 }
            return count
        }
    }

    /// Records a use of session `id`.
    public func touchWebSession(id: String, at time: Int64, address: String?) async throws(ContainerProtocolError) {
        try await store.run("record a web session's use") { client in
            _ = try await client.query(
                "UPDATE syncfs_web_sessions SET last_seen = \(time), address = \(address) WHERE id = \(id)")
        }
    }

    private static func webSessionRows(_ rows: PostgresRowSequence) async throws -> [PostgresWebSessionRow] {
        var found: [PostgresWebSessionRow] = []
        for try await (id, user, created, lastSeen, expires, revoked, address, agent) in rows.decode(
            (String, String, Int64, Int64, Int64, Int64?, String?, String).self)
        {
            found.append(
                PostgresWebSessionRow(
                    id: id, user: user, created: created, lastSeen: lastSeen, expires: expires, revoked: revoked,
                    address: address, agent: agent))
        }
        return found
    }
}
