import PostgresNIO
import SyncBackend

/// The legacy access tokens of a `PostgresStore`: the `syncfs_tokens` table (schema version 2), with
/// the semantics of the embedded token database (`SyncServer.TokenStore`): a row per token ever
/// made, keyed by an 8-hex-digit public ID, holding only the token's SHA-256 digest, the one
/// container it opens, a label and its creation and revocation times (Unix seconds). Revoked rows
/// stay. Rows this type inserts are legacy tokens (no user, role `editor`, no expiry); the other
/// columns of schema 7 are `PostgresAccessTables`'.
///
/// This type stores and finds rows; making tokens and digests is the caller's
/// (`SyncServer.TokenFormat`), so both stores share one format. Every read goes to the database
/// (no cache): a revocation through any process counts from the next request on. A failure to
/// reach the database is thrown (`unavailable`), never answered as "no such token".
public struct PostgresTokens: Sendable {
    /// One row as `list` returns it (never a digest).
    public struct Row: Sendable, Equatable {
        public var id: String
        public var container: String
        public var label: String
        public var created: Int64
        public var revoked: Int64?
    }

    let store: PostgresStore

    public init(store: PostgresStore) { self.store = store }

    /// Inserts a token row; false if `id` is taken (the caller draws another).
    public func insert(
        id: String, digest: String, container: String, label: String, created: Int64
    ) async throws(ContainerProtocolError) -> Bool {
        try await store.run("record a token") { client in
            let rows = try await client.query(
                """
                INSERT INTO syncfs_tokens (id, digest, container, containers, label, created)
                VALUES (\(id), \(digest), \(container), \([container]), \(label), \(created))
                ON CONFLICT (id) DO NOTHING RETURNING id
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    /// Every token ever made, oldest first.
    public func list() async throws(ContainerProtocolError) -> [Row] {
        try await store.run("list the tokens") { client in
            let rows = try await client.query(
                "SELECT id, container, label, created, revoked FROM syncfs_tokens ORDER BY created, id")
            var found: [Row] = []
            for try await (id, container, label, created, revoked) in rows.decode(
                (String, String, String, Int64, Int64?).self)
            {
                found.append(Row(id: id, container: container, label: label, created: created, revoked: revoked))
            }
            return found
        }
    }

    /// Revokes the token `id` at `time`: true if it was valid, false if already revoked, nil if
    /// there is no such token.
    public func revoke(id: String, at time: Int64) async throws(ContainerProtocolError) -> Bool? {
        try await store.run("revoke a token") { client -> Bool? in
            let rows = try await client.query(
                """
                WITH target AS (SELECT id, revoked FROM syncfs_tokens WHERE id = \(id) FOR UPDATE),
                     changed AS (UPDATE syncfs_tokens SET revoked = \(time)
                                 WHERE id IN (SELECT id FROM target WHERE revoked IS NULL) RETURNING id)
                SELECT (SELECT count(*) FROM changed) > 0 FROM target
                """)
            for try await changed in rows.decode(Bool.self) { return changed }
            return nil
        }
    }

    /// The container the legacy token with this digest opens, or nil if it is unknown, revoked, or
    /// not shaped as a legacy token (no user, role `editor`, one container, no expiry): the caller
    /// grants an editor's rights for ever, so no other token may pass here.
    public func container(forDigest digest: String) async throws(ContainerProtocolError) -> String? {
        try await store.run("check a token") { client -> String? in
            let rows = try await client.query(
                """
                SELECT container FROM syncfs_tokens
                WHERE digest = \(digest) AND revoked IS NULL AND user_name IS NULL AND role = 'editor'
                    AND expires IS NULL AND cardinality(containers) = 1
                """)
            for try await container in rows.decode(String.self) { return container }
            return nil
        }
    }
}
