/// `POST /v1/login` request body: who logs in, from which device, to which container, with a
/// password (and TOTP code) or a one-time enrolment code and the password to set.
public struct LoginRequest: Codable, Sendable {
    public var user: String
    public var container: String
    /// What the machine calls itself (free text, at most 200 bytes).
    public var device: String
    public var password: String?
    public var totp: String?
    /// A one-time enrolment code (`user add`, `user enrol`) instead of a password.
    public var enrolment: String?
    /// With an enrolment code: the password to set.
    public var newPassword: String?

    public init(
        user: String, container: String, device: String, password: String? = nil, totp: String? = nil,
        enrolment: String? = nil, newPassword: String? = nil
    ) {
        self.user = user
        self.container = container
        self.device = device
        self.password = password
        self.totp = totp
        self.enrolment = enrolment
        self.newPassword = newPassword
    }
}

/// `POST /v1/login` response body: the token (shown once), and what it is.
public struct LoginGrant: Codable, Equatable, Sendable {
    public var token: String
    public var tokenID: String
    public var device: String
    public var user: String
    public var container: String
    public var role: AccessRole
    public var expires: Int64

    public init(
        token: String, tokenID: String, device: String, user: String, container: String, role: AccessRole,
        expires: Int64
    ) {
        self.token = token
        self.tokenID = tokenID
        self.device = device
        self.user = user
        self.container = container
        self.role = role
        self.expires = expires
    }
}
