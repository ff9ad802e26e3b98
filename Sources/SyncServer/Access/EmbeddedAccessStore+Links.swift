import SQLiteSupport
import SyncBackend

/// Share links and the audit log in `tokens.db`.
extension EmbeddedAccessStore {
    // MARK: Share links

    static let linkColumns = """
        id, container, prefix, kind, password_hash, created, expires, max_downloads, downloads, revoked, \
        created_by, label
        """

    public func insertLink(_ link: LinkRecord, digest: String) async throws(SyncServerError) -> Bool {
        try await run(writing: true) { connection in
            let taken = try connection.statement("SELECT 1 FROM links WHERE id = ? OR digest = ?")
            defer { taken.reset() }
            taken.bind(1, link.id)
            taken.bind(2, digest)
            if try taken.step() { return false }
            let insert = try connection.statement(
                "INSERT INTO links (\(Self.linkColumns), digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            insert.bind(1, link.id)
            insert.bind(2, link.container)
            insert.bind(3, link.prefix)
            insert.bind(4, link.kind.rawValue)
            insert.bindOptional(5, link.passwordHash)
            insert.bind(6, link.created)
            insert.bindOptional(7, link.expires)
            insert.bindOptional(8, link.maxDownloads)
            insert.bind(9, link.downloads)
            insert.bindOptional(10, link.revoked)
            insert.bind(11, link.createdBy)
            insert.bind(12, link.label)
            insert.bind(13, digest)
            try insert.run()
            return true
        }
    }

    public func link(digest: String) async throws(SyncServerError) -> LinkRecord? {
        try await run(writing: false) { connection in
            let find = try connection.statement("SELECT \(Self.linkColumns) FROM links WHERE digest = ?")
            defer { find.reset() }
            find.bind(1, digest)
            return try find.step() ? try Self.linkRecord(find) : nil
        }
    }

    public func links(container: String?) async throws(SyncServerError) -> [LinkRecord] {
        try await run(writing: false) { connection in
            let list = try connection.statement(
                "SELECT \(Self.linkColumns) FROM links WHERE ?1 IS NULL OR container = ?1 ORDER BY created, id")
            defer { list.reset() }
            list.bindOptional(1, container)
            var found: [LinkRecord] = []
            while try list.step() { found.append(try Self.linkRecord(list)) }
            return found
        }
    }

    public func revokeLink(id: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await revoke(table: "links", id: id, at: time)
    }

    public func countDownload(link id: String) async throws(SyncServerError) -> Bool {
        try await run(writing: true) { connection in
            let count = try connection.statement(
                """
                UPDATE links SET downloads = downloads + 1
                WHERE id = ? AND (max_downloads IS NULL OR downloads < max_downloads) RETURNING 1
                """)
            defer { count.reset() }
            count.bind(1, id)
            let counted = try count.step()
            if counted { try count.run() }
            return counted
        }
    }

    private static func linkRecord(_ row: SQLiteStatement) throws -> LinkRecord {
        guard let kind = LinkKind(rawValue: row.text(3)) else {
            throw SyncServerError(.failed, "a link row has the unknown kind '\(row.text(3))'")
        }
        return LinkRecord(
            id: row.text(0), container: row.text(1), prefix: row.text(2), kind: kind,
            passwordHash: row.optionalText(4), created: row.int64(5), expires: row.optionalInt64(6),
            maxDownloads: row.optionalInt64(7), downloads: row.int64(8), revoked: row.optionalInt64(9),
            createdBy: row.text(10), label: row.text(11))
    }

    // MARK: Audit log

    public func appendAudit(_ record: AuditRecord) async throws(SyncServerError) {
        try await appendAudit(lines: [record])
    }

    public func appendAudit(lines: [AuditRecord]) async throws(SyncServerError) {
        try await run(writing: true) { connection in
            let insert = try connection.statement(
                "INSERT INTO audit (time, container, actor, address, action, target, result) VALUES (?, ?, ?, ?, ?, ?, ?)"
            )
            for record in lines {
                insert.reset()
                insert.bind(1, record.time)
                insert.bindOptional(2, record.container)
                insert.bind(3, record.actor)
                insert.bindOptional(4, record.address)
                insert.bind(5, record.action)
                insert.bind(6, record.target)
                insert.bind(7, record.result)
                try insert.run()
            }
        }
    }

    public func audit(container: String?, since: Int64, limit: Int) async throws(SyncServerError) -> [AuditRecord] {
        try await run(writing: false) { connection in
            let list = try connection.statement(
                """
                SELECT time, container, actor, address, action, target, result FROM audit
                WHERE time >= ?2 AND (?1 IS NULL OR container = ?1) ORDER BY time, rowid LIMIT ?3
                """)
            defer { list.reset() }
            list.bindOptional(1, container)
            list.bind(2, since)
            list.bind(3, Int64(max(0, limit)))
            var found: [AuditRecord] = []
            while try list.step() {
                found.append(
                    AuditRecord(
                        time: list.int64(0), container: list.optionalText(1), actor: list.text(2),
                        address: list.optionalText(3), action: list.text(4), target: list.text(5),
                        result: list.text(6)))
            }
            return found
        }
    }

    public func pruneAudit(before: Int64) async throws(SyncServerError) -> Int {
        try await run(writing: true) { connection in
            let delete = try connection.statement("DELETE FROM audit WHERE time < ?")
            delete.bind(1, before)
            try delete.run()
            let changed = try connection.statement("SELECT changes()")
            defer { changed.reset() }
            _ = try changed.step()
            return Int(changed.int64(0))
        }
    }
}
