import SyncBackend
import SyncCredentials

/// What an administrator does to accounts, memberships, devices and tokens, on either backend's
/// `AccessStore`: the one implementation behind `syncfs-mount user|member|device|token …` (and
/// behind the admin endpoints). Each change is checked here, made, and written to the audit log
/// with `actor` (`admin` for a command on the server's machine).
///
/// Contract: every refusal is `badInput` with a message for people and changes nothing; a store
/// that cannot be reached is `failed`.
public struct AccountAdmin: Sendable {
    public let store: any AccessStore
    public let actor: String
    public let address: String?
    let now: @Sendable () -> Int64

    public init(
        store: any AccessStore, actor: String = "admin", address: String? = nil,
        now: @escaping @Sendable () -> Int64 = AccessControl.unixNow
    ) {
        self.store = store
        self.actor = actor
        self.address = address
        self.now = now
    }

    /// How long an enrolment code lasts.
    public static let enrolmentLifetime: Int64 = 7 * 86_400

    /// What an enrolment code's stored digest is made of: the user's name and the code, so a
    /// code is found only together with its user's name.
    public static func enrolmentKey(user: String, code: String) -> String { user + "\n" + code }

    // MARK: Users

    /// Adds a user without a password and returns a one-time enrolment code for their first
    /// `syncfs-mount login` (shown once; valid `enrolmentLifetime`).
    public func addUser(_ name: String) async throws(SyncServerError) -> String {
        try Self.checkName(name)
        guard try await store.insertUser(UserRecord(name: name, passwordHash: nil, created: now())) else {
            throw SyncServerError(.badInput, "the user '\(name)' exists already")
        }
        try await record(.userAdd, container: nil, target: "user:\(name)")
        return try await enrol(name)
    }

    /// A new one-time enrolment code for `name` (older ones stay valid until used or expired).
    public func enrol(_ name: String) async throws(SyncServerError) -> String {
        _ = try await existingUser(name)
        let code = TokenFormat.newEnrolmentCode()
        try await store.insertEnrolment(
            digest: TokenFormat.digest(of: Self.enrolmentKey(user: name, code: code)), user: name,
            expires: now() + Self.enrolmentLifetime)
        try await record(.userEnrol, container: nil, target: "user:\(name)")
        return code
    }

    public func users() async throws(SyncServerError) -> [UserRecord] { try await store.users() }

    /// Disables (or enables again) a user: all their tokens and devices stop (or start) working
    /// from the next request on; disabling also signs every browser of theirs out for good.
    /// Returns false if it was so already.
    @discardableResult
    public func setDisabled(_ name: String, _ disabled: Bool) async throws(SyncServerError) -> Bool {
        let user = try await existingUser(name)
        guard (user.disabled != nil) != disabled else { return false }
        try await change(name, .disabled(disabled ? now() : nil))
        if disabled { _ = try await store.revokeWebSessions(user: name, at: now()) }
        try await record(disabled ? .userDisable : .userEnable, container: nil, target: "user:\(name)")
        return true
    }

    /// Sets `name`'s password (after `PasswordHash.check`) and signs every browser of theirs out.
    public func setPassword(_ name: String, to password: String) async throws(SyncServerError) {
        _ = try await existingUser(name)
        let hash: String
        do throws(CredentialError) {
            try PasswordHash.check(newPassword: password)
            hash = try PasswordHash.make(password)
        } catch {
            throw SyncServerError(.badInput, error.description)
        }
        try await change(name, .passwordHash(hash))
        _ = try await store.revokeWebSessions(user: name, at: now())
        try await record(.userPassword, container: nil, target: "user:\(name)")
    }

    /// Gives `name` a new TOTP secret (returned, with its `otpauth:` URI, to show once), or
    /// removes it (`enable` false; nil returned); either signs every browser of theirs out.
    public func setTOTP(_ name: String, enable: Bool) async throws(SyncServerError) -> (secret: String, uri: String)? {
        _ = try await existingUser(name)
        let secret = enable ? TOTP.newSecret() : nil
        try await change(name, .totpSecret(secret))
        _ = try await store.revokeWebSessions(user: name, at: now())
        try await record(.userTOTP, container: nil, target: "user:\(name)", result: enable ? "enabled" : "disabled")
        return secret.map { ($0, TOTP.otpauthURI(secret: $0, account: name)) }
    }

    private func change(_ name: String, _ change: UserChange) async throws(SyncServerError) {
        guard try await store.changeUser(name, change) != nil else {
            throw SyncServerError(.badInput, "no user '\(name)' (see `user list`)")
        }
    }

    func existingUser(_ name: String) async throws(SyncServerError) -> UserRecord {
        try Self.checkName(name)
        guard let user = try await store.user(named: name) else {
            throw SyncServerError(.badInput, "no user '\(name)' (see `user list`)")
        }
        return user
    }

    // MARK: Memberships

    /// Gives `user` `role` in `container` (replacing their role there).
    public func setMember(user: String, container: String, role: AccessRole) async throws(SyncServerError) {
        _ = try await existingUser(user)
        try Self.checkContainer(container)
        try await store.setMembership(MembershipRecord(user: user, container: container, role: role))
        try await record(.roleChange, container: container, target: "user:\(user)", result: role.rawValue)
    }

    /// Removes `user` from `container`: their tokens stop opening it at once. False if they were
    /// not a member.
    @discardableResult
    public func removeMember(user: String, container: String) async throws(SyncServerError) -> Bool {
        try Self.checkName(user)
        try Self.checkContainer(container)
        let removed = try await store.removeMembership(user: user, container: container)
        if removed { try await record(.memberRemove, container: container, target: "user:\(user)") }
        return removed
    }

    public func members(container: String?) async throws(SyncServerError) -> [MembershipRecord] {
        if let container { try Self.checkContainer(container) }
        return try await store.memberships(container: container)
    }

    // MARK: Devices

    public func devices(user: String?) async throws(SyncServerError) -> [DeviceRecord] {
        if let user { try Self.checkName(user) }
        return try await store.devices(user: user)
    }

    /// Revokes a device: every token made for it stops working at once. False if it was revoked.
    @discardableResult
    public func revokeDevice(_ id: String) async throws(SyncServerError) -> Bool {
        guard TokenFormat.isWellFormedID(id), let revoked = try await store.revokeDevice(id: id, at: now()) else {
            throw SyncServerError(.badInput, "no device with ID '\(id)' (see `device list`)")
        }
        if revoked { try await record(.deviceRevoke, container: nil, target: "device:\(id)") }
        return revoked
    }

    // MARK: Tokens

    /// When a new token stops working.
    public enum Expiry: Equatable, Sendable {
        /// `AccessPolicy.defaultTokenLifetime` from now.
        case standard
        /// This many seconds from now (1 s ... `AccessPolicy.longestTokenLifetime`).
        case after(Int64)
        /// Never: a service token, listed as such.
        case never
    }

    /// Makes a token for `user` opening `containers` with at most `role` (each must be at most the
    /// user's membership there now), for `device` if given. Returns its row and the token, which
    /// is never stored and shown only now.
    public func createToken(
        user: String, containers: [String], role: AccessRole, expiry: Expiry, label: String, device: String? = nil
    ) async throws(SyncServerError) -> (record: TokenRecord, token: String) {
        let account = try await existingUser(user)
        guard account.disabled == nil else { throw SyncServerError(.badInput, "the user '\(user)' is disabled") }
        guard !containers.isEmpty else { throw SyncServerError(.badInput, "a token needs at least one container") }
        guard containers.count <= 100 else { throw SyncServerError(.badInput, "a token opens at most 100 containers") }
        guard AccessLabel.isValid(label) else {
            throw SyncServerError(.badInput, "a label has at most 200 bytes and no control characters")
        }
        let roles = try await store.roles(user: user)
        for container in containers {
            try Self.checkContainer(container)
            guard let member = roles[container] else {
                throw SyncServerError(
                    .badInput, "'\(user)' is not a member of '\(container)' (`member add` first)")
            }
            guard role <= member else {
                throw SyncServerError(
                    .badInput,
                    "'\(user)' is \(member.withArticle) in '\(container)': a token cannot have more (\(role.rawValue))")
            }
        }
        let created = now()
        let expires: Int64?
        switch expiry {
        case .standard: expires = created + AccessPolicy.defaultTokenLifetime
        case .never: expires = nil
        case .after(let seconds):
            guard (1...AccessPolicy.longestTokenLifetime).contains(seconds) else {
                throw SyncServerError(
                    .badInput, "a token lasts at most 365 days (or --no-expiry for a service token)")
            }
            expires = created + seconds
        }
        let token = TokenFormat.newToken()
        for _ in 0..<16 {
            let record = TokenRecord(
                id: TokenFormat.newID(), user: user, device: device, containers: Array(Set(containers)).sorted(),
                role: role, label: label, created: created, expires: expires)
            if try await store.insertToken(record, digest: TokenFormat.digest(of: token)) {
                for container in record.containers {
                    try await self.record(
                        .tokenCreate, container: container, target: "token:\(record.id)", result: role.rawValue)
                }
                return (record, token)
            }
        }
        throw SyncServerError(.failed, "cannot find a free token ID")
    }

    /// Makes a container token (`token create --container NAME` alone): an editor of `container`,
    /// no user, no expiry — what every token was before accounts. Returns its ID and the token.
    public func createContainerToken(
        container: String, label: String
    ) async throws(SyncServerError) -> (id: String, token: String) {
        try Self.checkContainer(container)
        guard AccessLabel.isValid(label) else {
            throw SyncServerError(.badInput, "a label has at most 200 bytes and no control characters")
        }
        let token = TokenFormat.newToken()
        for _ in 0..<16 {
            let record = TokenRecord(
                id: TokenFormat.newID(), user: nil, device: nil, containers: [container], role: .editor, label: label,
                created: now(), expires: nil)
            if try await store.insertToken(record, digest: TokenFormat.digest(of: token)) {
                try await self.record(
                    .tokenCreate, container: container, target: "token:\(record.id)", result: "editor")
                return (record.id, token)
            }
        }
        throw SyncServerError(.failed, "cannot find a free token ID")
    }

    public func tokens() async throws(SyncServerError) -> [TokenRecord] { try await store.tokens() }

    /// Revokes a token at once (every process, open long polls within
    /// `AccessControl.longPollRecheck`). False if it was revoked already.
    @discardableResult
    public func revokeToken(_ id: String) async throws(SyncServerError) -> Bool {
        guard TokenFormat.isWellFormedID(id), let revoked = try await store.revokeToken(id: id, at: now()) else {
            throw SyncServerError(.badInput, "no token with ID '\(id)' (see `token list`)")
        }
        if revoked { try await record(.tokenRevoke, container: nil, target: "token:\(id)") }
        return revoked
    }

    // MARK: Audit

    /// Appends an audit line for a change this administrator made.
    func record(
        _ action: AuditAction, container: String?, target: String, result: String = "ok"
    ) async throws(SyncServerError) {
        try await store.appendAudit(
            AuditRecord(
                time: now(), container: container, actor: actor, address: address, action: action.rawValue,
                target: target, result: result))
    }

    static func checkName(_ name: String) throws(SyncServerError) {
        guard AccountName.isValid(name) else {
            throw SyncServerError(.badInput, "'\(name)' is not a user name (\(AccountName.rule))")
        }
    }

    static func checkContainer(_ name: String) throws(SyncServerError) {
        guard ContainerName.isValid(name) else {
            throw SyncServerError(
                .badInput, "'\(name)' is not a container name (1-64 bytes of A-Z a-z 0-9 . _ -, no leading .)")
        }
    }
}
