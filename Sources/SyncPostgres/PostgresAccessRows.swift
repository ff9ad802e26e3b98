import SyncBackend

/// The rows of the access tables (`PostgresAccessSchema`), column for column, as
/// `PostgresAccessTables` writes and reads them. Times are Unix seconds; no row holds a secret,
/// only digests (outside the rows) and password hashes. The server's record types
/// (`SyncServer.TokenRecord` and its siblings) map one to one onto these.

/// A row of `syncfs_tokens`.
public struct PostgresTokenRow: Sendable, Equatable {
    public var id: String
    /// Nil for a legacy token.
    public var user: String?
    public var device: String?
    /// At least one; sorted when written.
    public var containers: [String]
    public var role: AccessRole
    public var label: String
    public var created: Int64
    public var expires: Int64?
    public var revoked: Int64?
    public var lastUsed: Int64?
    public var lastAddress: String?

    public init(
        id: String, user: String?, device: String?, containers: [String], role: AccessRole, label: String,
        created: Int64, expires: Int64?, revoked: Int64?, lastUsed: Int64?, lastAddress: String?
    ) {
        self.id = id
        self.user = user
        self.device = device
        self.containers = containers
        self.role = role
        self.label = label
        self.created = created
        self.expires = expires
        self.revoked = revoked
        self.lastUsed = lastUsed
        self.lastAddress = lastAddress
    }
}

/// A row of `syncfs_users`.
public struct PostgresUserRow: Sendable, Equatable {
    public var name: String
    public var passwordHash: String?
    public var totpSecret: String?
    public var totpLastStep: Int64?
    public var created: Int64
    public var disabled: Int64?

    public init(
        name: String, passwordHash: String?, totpSecret: String?, totpLastStep: Int64?, created: Int64,
        disabled: Int64?
    ) {
        self.name = name
        self.passwordHash = passwordHash
        self.totpSecret = totpSecret
        self.totpLastStep = totpLastStep
        self.created = created
        self.disabled = disabled
    }
}

/// A row of `syncfs_devices`.
public struct PostgresDeviceRow: Sendable, Equatable {
    public var id: String
    public var user: String
    public var name: String
    public var created: Int64
    public var revoked: Int64?

    public init(id: String, user: String, name: String, created: Int64, revoked: Int64?) {
        self.id = id
        self.user = user
        self.name = name
        self.created = created
        self.revoked = revoked
    }
}

/// A row of `syncfs_members`.
public struct PostgresMemberRow: Sendable, Equatable {
    public var user: String
    public var container: String
    public var role: AccessRole

    public init(user: String, container: String, role: AccessRole) {
        self.user = user
        self.container = container
        self.role = role
    }
}

/// A row of `syncfs_links`.
public struct PostgresLinkRow: Sendable, Equatable {
    public var id: String
    public var container: String
    public var prefix: String
    /// `view`, `download` or `upload-only` (the table refuses anything else).
    public var kind: String
    public var passwordHash: String?
    public var created: Int64
    public var expires: Int64?
    public var maxDownloads: Int64?
    public var downloads: Int64
    public var revoked: Int64?
    public var createdBy: String
    public var label: String

    public init(
        id: String, container: String, prefix: String, kind: String, passwordHash: String?, created: Int64,
        expires: Int64?, maxDownloads: Int64?, downloads: Int64, revoked: Int64?, createdBy: String, label: String
    ) {
        self.id = id
        self.container = container
        self.prefix = prefix
        self.kind = kind
        self.passwordHash = passwordHash
        self.created = created
        self.expires = expires
        self.maxDownloads = maxDownloads
        self.downloads = downloads
        self.revoked = revoked
        self.createdBy = createdBy
        self.label = label
    }
}

/// A row of `syncfs_audit` (without its sequence number, which only orders lines of one second).
public struct PostgresAuditRow: Sendable, Equatable {
    public var time: Int64
    public var container: String?
    public var actor: String
    public var address: String?
    public var action: String
    public var target: String
    public var result: String

    public init(
        time: Int64, container: String?, actor: String, address: String?, action: String, target: String,
        result: String
    ) {
        self.time = time
        self.container = container
        self.actor = actor
        self.address = address
        self.action = action
        self.target = target
        self.result = result
    }
}
