import SyncBackend

/// The rows an `AccessStore` keeps, the same on every backend. Times are Unix seconds. Secrets
/// are never here: tokens, link secrets and enrolment codes only as SHA-256 digests
/// (`TokenFormat.digest`), passwords only as Argon2id encodings (`PasswordHash`).

/// One access token as the store keeps it.
public struct TokenRecord: Codable, Equatable, Sendable {
    /// The public ID, 8 hex digits: what `token list` shows and `token revoke` takes.
    public var id: String
    /// The user it acts for; nil for a legacy token (one container, an editor's rights, no user).
    public var user: String?
    /// The device it was made for at login; nil for a token made by an admin command.
    public var device: String?
    /// The containers it opens (at least one, each a valid `ContainerName`), sorted.
    public var containers: [String]
    /// The most it may do; the server uses the lower of this and the user's membership.
    public var role: AccessRole
    public var label: String
    public var created: Int64
    /// When it stops working; nil for a service token (`--no-expiry`) or a legacy token.
    public var expires: Int64?
    public var revoked: Int64?
    /// When and from where it was last used (recorded at most once a minute).
    public var lastUsed: Int64?
    public var lastAddress: String?

    public init(
        id: String, user: String?, device: String?, containers: [String], role: AccessRole, label: String,
        created: Int64, expires: Int64?, revoked: Int64? = nil, lastUsed: Int64? = nil, lastAddress: String? = nil
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

    /// Made by the per-container token command before accounts existed.
    public var isLegacy: Bool { user == nil }
}

/// One user account.
public struct UserRecord: Codable, Equatable, Sendable {
    /// 1-64 bytes of `a-z 0-9 . _ -` and `@` (`AccountName`), unique.
    public var name: String
    /// `PasswordHash`'s encoding (Argon2id with its parameters and salt); nil: no password (the
    /// user logs in with an enrolment code only).
    public var passwordHash: String?
    /// The TOTP secret (RFC 6238), base32; nil when the user has none.
    public var totpSecret: String?
    /// The last TOTP time step accepted (a code is good once).
    public var totpLastStep: Int64?
    public var created: Int64
    /// When it was disabled; nil while enabled. A disabled user's tokens and devices stop working.
    public var disabled: Int64?

    public init(
        name: String, passwordHash: String?, totpSecret: String? = nil, totpLastStep: Int64? = nil, created: Int64,
        disabled: Int64? = nil
    ) {
        self.name = name
        self.passwordHash = passwordHash
        self.totpSecret = totpSecret
        self.totpLastStep = totpLastStep
        self.created = created
        self.disabled = disabled
    }
}

/// One change to a user's row (`AccessStore.changeUser`).
public enum UserChange: Equatable, Sendable {
    /// A new password (`PasswordHash`'s encoding).
    case passwordHash(String)
    /// A new TOTP secret, or none; the last accepted step is forgotten either way.
    case totpSecret(String?)
    /// Disabled at this time, or enabled (nil).
    case disabled(Int64?)
    /// A TOTP step accepted at login: stored only if later than the one stored, atomically, so
    /// two logins racing with one code cannot both pass.
    case acceptedTOTPStep(Int64)
}

/// One device a user logged in from.
public struct DeviceRecord: Codable, Equatable, Sendable {
    /// The public ID, 8 hex digits.
    public var id: String
    public var user: String
    /// What the machine called itself at login (free text, at most 200 bytes, no controls).
    public var name: String
    public var created: Int64
    /// When it was revoked; a revoked device's tokens stop working.
    public var revoked: Int64?

    public init(id: String, user: String, name: String, created: Int64, revoked: Int64? = nil) {
        self.id = id
        self.user = user
        self.name = name
        self.created = created
        self.revoked = revoked
    }
}

/// One user's role in one container.
public struct MembershipRecord: Codable, Equatable, Sendable {
    public var user: String
    public var container: String
    public var role: AccessRole

    public init(user: String, container: String, role: AccessRole) {
        self.user = user
        self.container = container
        self.role = role
    }
}

/// What a share link lets its holder do.
public enum LinkKind: String, Codable, Sendable, CaseIterable {
    /// Browse the prefix and download its files.
    case view
    /// Download the one file the prefix names.
    case download
    /// A drop box: add files under the prefix; never list or read.
    case uploadOnly = "upload-only"
}

/// One share link: a secret URL for a container's path prefix.
public struct LinkRecord: Codable, Equatable, Sendable {
    /// The public ID, 8 hex digits.
    public var id: String
    public var container: String
    /// The path it opens, `/`-separated names from the container's root without a leading `/`;
    /// empty for the whole container (only for `view` and `upload-only`).
    public var prefix: String
    public var kind: LinkKind
    /// `PasswordHash`'s encoding; nil when the link needs no password.
    public var passwordHash: String?
    public var created: Int64
    public var expires: Int64?
    /// Downloads allowed in all; nil for no limit.
    public var maxDownloads: Int64?
    /// Downloads counted so far.
    public var downloads: Int64
    public var revoked: Int64?
    /// The actor who made it (as in `AuditRecord.actor`).
    public var createdBy: String
    public var label: String

    public init(
        id: String, container: String, prefix: String, kind: LinkKind, passwordHash: String?, created: Int64,
        expires: Int64?, maxDownloads: Int64?, downloads: Int64 = 0, revoked: Int64? = nil, createdBy: String,
        label: String
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

/// One line of the audit log: who (`actor`) did what (`action`) to what (`target`) from where,
/// and how it ended (`result`). Append-only; pruned only by age.
public struct AuditRecord: Codable, Equatable, Sendable {
    /// Unix seconds.
    public var time: Int64
    /// The container concerned; nil for a server-wide event (a user added, a login).
    public var container: String?
    /// `user:NAME`, `token:ID`, `device:ID`, `link:ID`, `admin` (a command on the server's
    /// machine), or `anonymous`.
    public var actor: String
    /// The peer's address, when the event came over the network.
    public var address: String?
    /// `AuditAction`'s raw value.
    public var action: String
    public var target: String
    /// `ok`, `refused`, `failed`, or a short reason.
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
