import SyncPostgres
import SyncServer

/// The web page's sessions of `PostgresAccess` (`syncfs_web_sessions`).
extension PostgresAccess {
    public func insertWebSession(_ session: WebSessionRecord, digest: String) async throws(SyncServerError) -> Bool {
        try await attempt {
            try await tables.insertWebSession(
                PostgresWebSessionRow(
                    id: session.id, user: session.user, created: session.created, lastSeen: session.lastSeen,
                    expires: session.expires, revoked: session.revoked, address: session.address,
                    agent: session.agent),
                digest: digest)
        }
    }

    public func webSession(digest: String) async throws(SyncServerError) -> WebSessionRecord? {
        try await attempt { try await tables.webSession(digest: digest) }.map(Self.record)
    }

    public func webSessions(user: String, limit: Int) async throws(SyncServerError) -> [WebSessionRecord] {
        try await attempt { try await tables.webSessions(user: user, limit: limit) }.map(Self.record)
    }

    public func revokeWebSession(id: String, user: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await attempt { try await tables.revokeWebSession(id: id, user: user, at: time) }
    }

    public func revokeWebSessions(user: String, at time: Int64) async throws(SyncServerError) -> Int {
        try await attempt { try await tables.revokeWebSessions(user: user, at: time) }
    }

    public func touchWebSession(id: String, at time: Int64, address: String?) async throws(SyncServerError) {
        try await attempt { try await tables.touchWebSession(id: id, at: time, address: address) }
    }

    private static func record(_ row: PostgresWebSessionRow) -> WebSessionRecord {
        WebSessionRecord(
            id: row.id, user: row.user, created: row.created, lastSeen: row.lastSeen, expires: row.expires,
            revoked: row.revoked, address: row.address, agent: row.agent)
    }
}
