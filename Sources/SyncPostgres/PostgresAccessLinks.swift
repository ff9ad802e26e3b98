import PostgresNIO
import SyncBackend

/// Share links (`syncfs_links`), with `PostgresAccessTables`' contract.
extension PostgresAccessTables {
    /// The columns `linkRows` decodes, in its order (a constant, spliced unescaped).
    private static let linkColumns = """
        id, container, prefix, kind, password_hash, created, expires, max_downloads, downloads, revoked, \
        created_by, label
        """

    /// Inserts a link with this digest of its secret; false if its ID or digest is taken.
    public func insertLink(_ link: PostgresLinkRow, digest: String) async throws(ContainerProtocolError) -> Bool {
        try await store.run("record a link") { client in
            let rows = try await client.query(
                """
                INSERT INTO syncfs_links (id, digest, container, prefix, kind, password_hash, created, expires,
                    max_downloads, downloads, revoked, created_by, label)
                VALUES (\(link.id), \(digest), \(link.container), \(link.prefix), \(link.kind), \(link.passwordHash),
                    \(link.created), \(link.expires), \(link.maxDownloads), \(link.downloads), \(link.revoked),
                    \(link.createdBy), \(link.label))
                ON CONFLICT DO NOTHING RETURNING id
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    /// The link with this digest, revoked or not.
    public func link(digest: String) async throws(ContainerProtocolError) -> PostgresLinkRow? {
        try await store.run("look up a link") { client in
            try await Self.linkRows(
                client.query("SELECT \(unescaped: Self.linkColumns) FROM syncfs_links WHERE digest = \(digest)")
            ).first
        }
    }

    /// The links of `container` (every link with nil), oldest first.
    public func links(container: String?) async throws(ContainerProtocolError) -> [PostgresLinkRow] {
        try await store.run("list the links") { client in
            guard let container else {
                return try await Self.linkRows(
                    client.query("SELECT \(unescaped: Self.linkColumns) FROM syncfs_links ORDER BY created, id"))
            }
            return try await Self.linkRows(
                client.query(
                    """
                    SELECT \(unescaped: Self.linkColumns) FROM syncfs_links
                    WHERE container = \(container) ORDER BY created, id
                    """))
        }
    }

    /// Revokes link `id` at `time`: true if it was valid, false if revoked already, nil if unknown.
    public func revokeLink(id: String, at time: Int64) async throws(ContainerProtocolError) -> Bool? {
        try await store.run("revoke a link") { client -> Bool? in
            try await Self.firstBool(
                client.query(
                    """
                    WITH target AS (SELECT id, revoked FROM syncfs_links WHERE id = \(id) FOR UPDATE),
                         changed AS (UPDATE syncfs_links SET revoked = \(time)
                                     WHERE id IN (SELECT id FROM target WHERE revoked IS NULL) RETURNING id)
                    SELECT (SELECT count(*) FROM changed) > 0 FROM target
                    """))
        }
    }

    /// Counts one download through link `id` in one statement: false (nothing counted) when it has
    /// a maximum and reached it, or there is no such link. Concurrent calls never count past the
    /// maximum (each re-checks the row it waited for).
    public func countDownload(link id: String) async throws(ContainerProtocolError) -> Bool {
        try await store.run("count a link's download") { client in
            let rows = try await client.query(
                """
                UPDATE syncfs_links SET downloads = downloads + 1
                WHERE id = \(id) AND (max_downloads IS NULL OR downloads < max_downloads)
                RETURNING id
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    private static func linkRows(_ rows: PostgresRowSequence) async throws -> [PostgresLinkRow] {
        var found: [PostgresLinkRow] = []
        for try await (
            id, container, prefix, kind, password, created, expires, maximum, downloads, revoked, createdBy, label
        ) in rows.decode(
            (String, String, String, String, String?, Int64, Int64?, Int64?, Int64, Int64?, String, String).self)
        {
            found.append(
                PostgresLinkRow(
                    id: id, container: container, prefix: prefix, kind: kind, passwordHash: password, created: created,
                    expires: expires, maxDownloads: maximum, downloads: downloads, revoked: revoked,
                    createdBy: createdBy, label: label))
        }
        return found
    }
}
