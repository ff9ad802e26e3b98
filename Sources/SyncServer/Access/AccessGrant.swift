import SyncBackend

/// What a valid token lets its holder do right now: a role in each container it opens.
public struct AccessGrant: Equatable, Sendable {
    /// The token's public ID.
    public var tokenID: String
    /// The user it acts for; nil for a legacy token.
    public var user: String?
    /// The device it was made for; nil for tokens made by a command.
    public var device: String?
    /// The role in each container, the lower of the token's and the user's membership; a
    /// container the user is no longer a member of is absent.
    public var roles: [String: AccessRole]

    public init(tokenID: String, user: String?, device: String?, roles: [String: AccessRole]) {
        self.tokenID = tokenID
        self.user = user
        self.device = device
        self.roles = roles
    }

    /// The holder as the audit log names it: `user:NAME` (`/device:ID`), or `token:ID`.
    public var actor: String {
        guard let user else { return "token:\(tokenID)" }
        return "user:\(user)" + (device.map { "/device:\($0)" } ?? "") + "/token:\(tokenID)"
    }
}

/// The rules that turn stored rows into a grant, the same for every backend.
public enum AccessPolicy {
    /// Tokens made without `--expires` last 90 days; none may last longer than a year unless it is
    /// a service token (`--no-expiry`).
    public static let defaultTokenLifetime: Int64 = 90 * 86_400
    public static let longestTokenLifetime: Int64 = 365 * 86_400

    /// The grant `token` gives at `now`, or nil when it gives none: revoked, expired, its user
    /// missing or disabled, its device missing, someone else's or revoked.
    /// `memberships`: the user's role per container (ignored for a legacy token).
    public static func grant(
        token: TokenRecord, user: UserRecord?, device: DeviceRecord?, memberships: [String: AccessRole], now: Int64
    ) -> AccessGrant? {
        guard token.revoked == nil else { return nil }
        if let expires = token.expires, now >= expires { return nil }
        guard let name = token.user else {
            // A legacy token: an editor in its containers, whatever else its row says.
            let roles = Dictionary(token.containers.map { ($0, min(token.role, .editor)) }, uniquingKeysWith: min)
            return AccessGrant(tokenID: token.id, user: nil, device: nil, roles: roles)
        }
        guard let user, user.name == name, user.disabled == nil else { return nil }
        if let deviceID = token.device {
            guard let device, device.id == deviceID, device.user == name, device.revoked == nil else { return nil }
        }
        var roles: [String: AccessRole] = [:]
        for container in token.containers {
            if let member = memberships[container] { roles[container] = min(token.role, member) }
        }
        return AccessGrant(tokenID: token.id, user: name, device: token.device, roles: roles)
    }
}
