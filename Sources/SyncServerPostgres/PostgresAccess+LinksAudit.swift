import SyncBackend
import SyncPostgres
import SyncServer

/// Failed attempts, share links and the audit log of `PostgresAccess`.
extension PostgresAccess {
    // MARK: Failed attempts

    public func noteFailure(key: String, at time: Int64) async throws(SyncServerError) {
        try await attempt { try await tables.noteFailure(key: key, at: time) }
    }

    public func failures(key: String, since time: Int64) async throws(SyncServerError) -> Int {
        try await attempt { try await tables.failures(key: key, since: time) }
    }

    public func clearFailures(key: String?, before: Int64) async throws(SyncServerError) {
        try await attempt {
            try await tables.clearFailures(key: key, before: before)
        }
    }

    // MARK: Share links

    public func insertLink(_ link: LinkRecord, digest: String) async throws(SyncServerError) -> Bool {
        try await attempt {
            try await tables.insertLink(PostgresLinkRow(link), digest: digest)
        }
    }

    public func link(digest: String) async throws(SyncServerError) -> LinkRecord? {
        guard let row = try await attempt({ try await tables.link(digest: digest) })
        else { return nil }
        return try LinkRecord(row)
    }

    public func links(container: String?) async throws(SyncServerError) -> [LinkRecord] {
        var links: [LinkRecord] = []
        for row in try await attempt({
            try await tables.links(container: container)
        }) {
            links.append(try LinkRecord(row))
        }
        return links
    }

    public func revokeLink(id: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await attempt { try await tables.revokeLink(id: id, at: time) }
    }

    public func countDownload(link id: String) async throws(SyncServerError) -> Bool {
        try await attempt { try await tables.countDownload(link: id) }
    }

    // MARK: Audit log

    public func appendAudit(_ record: AuditRecord) async throws(SyncServerError) {
        try await attempt {
            try await tables.appendAudit(
                PostgresAuditRow(
                    time: record.time, container: record.container, actor: record.actor, address: record.address,
                    action: record.action, target: record.target, result: record.result))
        }
    }

    public func audit(container: String?, since: Int64, limit: Int) async throws(SyncServerError) -> [AuditRecord] {
        try await attempt {
            try await tables.audit(container: container, since: since, limit: limit)
        }.map {
            AuditRecord(
                time: $0.time, container: $0.container, actor: $0.actor, address: $0.address, action: $0.action,
                target: $0.target, result: $0.result)
        }
    }

    public func pruneAudit(before: Int64) async throws(SyncServerError) -> Int {
        try await attempt { try await tables.pruneAudit(before: before) }
    }
}

extension LinkRecord {
    /// The record of a stored row; a kind this program does not know is damage.
    init(_ row: PostgresLinkRow) throws(SyncServerError) {
        guard let kind = LinkKind(rawValue: row.kind) else {
            throw SyncServerError(.failed, "PostgreSQL: a stored link kind is not one this program knows")
        }
        self.init(
            id: row.id, container: row.container, prefix: row.prefix, kind: kind, passwordHash: row.passwordHash,
            created: row.created, expires: row.expires, maxDownloads: row.maxDownloads, downloads: row.downloads,
            revoked: row.revoked, createdBy: row.createdBy, label: row.label)
    }
}

extension PostgresLinkRow {
    init(_ record: LinkRecord) {
        self.init(
            id: record.id, container: record.container, prefix: record.prefix, kind: record.kind.rawValue,
            passwordHash: record.passwordHash, created: record.created, expires: record.expires,
            maxDownloads: record.maxDownloads, downloads: record.downloads, revoked: record.revoked,
            createdBy: record.createdBy, label: record.label)
    }
}
