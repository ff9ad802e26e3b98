import PostgresNIO
import SyncBackend

/// The access tables of a `PostgresStore` (schema 7, `PostgresAccessSchema`): tokens, users,
/// devices, memberships, enrolment codes, failed attempts, share links and the audit log, with
/// the semantics of `SyncServer.AccessStore` (which `SyncServerPostgres.PostgresAccess` conforms
/// to through this type).
///
/// It stores and finds rows; it decides nothing. Every read goes to the database (no cache), so
/// a change by another process counts from the next call on. A failure to reach the database is
/// thrown (`unavailable`), never answered as "no such row"; a row the code cannot read (an
/// unknown role) is `storageFailure`. Every value is a bound parameter. Each write that must be
/// atomic is one statement: a revocation, taking an enrolment code, counting a download.
public struct PostgresAccessTables: Sendable {
    let store: PostgresStore

    public init(store: PostgresStore) { self.store = store }

    // MARK: Tokens

    /// The columns `tokenRows` decodes, in its order (a constant, spliced unescaped).
    private static let tokenColumns =
        "id, user_name, device_id, containers, role, label, created, expires, revoked, last_used, last_address"

    /// Inserts `token` with this digest (its containers sorted); false if its ID or digest is taken.
    public func insertToken(_ token: PostgresTokenRow, digest: String) async throws(ContainerProtocolError) -> Bool {
        let containers = token.containers.sorted()
        return try await store.run("record a token") { client in
            let rows = try await client.query(
                """
                INSERT INTO syncfs_tokens (id, digest, container, containers, user_name, device_id, role, label,
                    created, expires, revoked, last_used, last_address)
                VALUES (\(token.id), \(digest), \(containers.first), \(containers), \(token.user), \(token.device),
                    \(token.role.rawValue), \(token.label), \(token.created), \(token.expires), \(token.revoked),
                    \(token.lastUsed), \(token.lastAddress))
                ON CONFLICT DO NOTHING RETURNING id
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    /// The token with this digest, revoked or not.
    public func token(digest: String) async throws(ContainerProtocolError) -> PostgresTokenRow? {
        try await store.run("look up a token") { client in
            try await Self.tokenRows(
                client.query(
                    "SELECT \(unescaped: Self.tokenColumns) FROM syncfs_tokens WHERE digest = \(digest)")
            ).first
        }
    }

    /// Every token ever made, oldest first.
    public func tokens() async throws(ContainerProtocolError) -> [PostgresTokenRow] {
        try await store.run("list the tokens") { client in
            try await Self.tokenRows(
                client.query("SELECT \(unescaped: Self.tokenColumns) FROM syncfs_tokens ORDER BY created, id"))
        }
    }

    /// Revokes token `id` at `time`: true if it was valid, false if revoked already, nil if unknown.
    public func revokeToken(id: String, at time: Int64) async throws(ContainerProtocolError) -> Bool? {
        try await store.run("revoke a token") { client -> Bool? in
            try await Self.firstBool(
                client.query(
                    """
                    WITH target AS (SELECT id, revoked FROM syncfs_tokens WHERE id = \(id) FOR UPDATE),
                         changed AS (UPDATE syncfs_tokens SET revoked = \(time)
                                     WHERE id IN (SELECT id FROM target WHERE revoked IS NULL) RETURNING id)
                    SELECT (SELECT count(*) FROM changed) > 0 FROM target
                    """))
        }
    }

    /// Records a use of token `id` at `time` from `address`.
    public func touchToken(id: String, at time: Int64, address: String?) async throws(ContainerProtocolError) {
        try await store.run("record a token's use") { client in
            _ = try await client.query(
                "UPDATE syncfs_tokens SET last_used = \(time), last_address = \(address) WHERE id = \(id)")
        }
    }

    private static func tokenRows(_ rows: PostgresRowSequence) async throws -> [PostgresTokenRow] {
        var found: [PostgresTokenRow] = []
        for try await (id, user, device, containers, role, label, created, expires, revoked, lastUsed, address)
            in rows.decode(
                (
                    String, String?, String?, [String], String, String, Int64, Int64?, Int64?, Int64?, String?
                ).self)
        {
            found.append(
                PostgresTokenRow(
                    id: id, user: user, device: device, containers: containers.sorted(), role: try Self.role(role),
                    label: label, created: created, expires: expires, revoked: revoked, lastUsed: lastUsed,
                    lastAddress: address))
        }
        return found
    }

    // MARK: Shared

    /// A stored role; a value the code does not know is damage, not a row to skip.
    static func role(_ text: String) throws -> AccessRole {
        guard let role = AccessRole(rawValue: text) else {
            throw ContainerProtocolError.storageFailure("PostgreSQL: a stored role is not one this program knows")
        }
        return role
    }

    /// The one boolean a revocation's statement answers; nil when it answers no row.
    static func firstBool(_ rows: PostgresRowSequence) async throws -> Bool? {
        for try await value in rows.decode(Bool.self) { return value }
        return nil
    }
}
