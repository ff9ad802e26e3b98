import SyncBackend

/// The JSON bodies of a container's admin endpoints (`/v1/containers/NAME/members|links|audit`;
/// doc/PROTOCOL.md "Container admins").

public struct MemberList: Codable, Equatable, Sendable {
    public var members: [MembershipRecord]
}

/// `POST …/members`: gives an existing user a role in this container.
public struct MemberChange: Codable, Equatable, Sendable {
    public var user: String
    public var role: AccessRole

    public init(user: String, role: AccessRole) {
        self.user = user
        self.role = role
    }
}

/// A link as its container's admins see it: never its secret or its password hash.
public struct LinkSummary: Codable, Equatable, Sendable {
    public var id: String
    public var container: String
    public var path: String
    public var kind: LinkKind
    public var hasPassword: Bool
    public var created: Int64
    public var expires: Int64?
    public var maxDownloads: Int64?
    public var downloads: Int64
    public var revoked: Int64?
    public var createdBy: String
    public var label: String

    public init(_ link: LinkRecord) {
        id = link.id
        container = link.container
        path = link.prefix
        kind = link.kind
        hasPassword = link.passwordHash != nil
        created = link.created
        expires = link.expires
        maxDownloads = link.maxDownloads
        downloads = link.downloads
        revoked = link.revoked
        createdBy = link.createdBy
        label = link.label
    }
}

public struct LinkList: Codable, Equatable, Sendable {
    public var links: [LinkSummary]
}

/// `POST …/links`: a new link of this container (`AccountAdmin.LinkOrder`).
public struct LinkOrderRequest: Codable, Equatable, Sendable {
    public var path: String
    public var kind: LinkKind
    public var password: String?
    /// Seconds from now; nil for `AccountAdmin.defaultLinkLifetime` (or none with `noExpiry`).
    public var expiresIn: Int64?
    public var noExpiry: Bool?
    public var maxDownloads: Int64?
    public var label: String?

    public init(
        path: String, kind: LinkKind, password: String? = nil, expiresIn: Int64? = nil, noExpiry: Bool? = nil,
        maxDownloads: Int64? = nil, label: String? = nil
    ) {
        self.path = path
        self.kind = kind
        self.password = password
        self.expiresIn = expiresIn
        self.noExpiry = noExpiry
        self.maxDownloads = maxDownloads
        self.label = label
    }
}

/// The answer to `POST …/links`: the link and its secret, shown this once.
public struct CreatedLink: Codable, Equatable, Sendable {
    public var link: LinkSummary
    public var secret: String
    /// `/v1/links/SECRET`, below the server's address.
    public var path: String
}

public struct RevokeAnswer: Codable, Equatable, Sendable {
    /// False when it was revoked already.
    public var revoked: Bool
}

public struct AuditPage: Codable, Equatable, Sendable {
    /// Oldest first.
    public var lines: [AuditRecord]
}
