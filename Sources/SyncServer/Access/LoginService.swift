import SyncBackend
import SyncCredentials

/// Logging in: a user's name and password (and TOTP code when they have one), or a one-time
/// enrolment code an admin made, buys a device and a token for one container. Shared by the
/// server's `POST /v1/login` and its tests, on either backend's `AccessStore`.
///
/// Contract:
/// - Every refusal of the credentials is the same `LoginRefusal.wrongCredentials`, whatever was
///   wrong (an unknown user, a wrong password or code, a disabled user), and costs the same time
///   (an unknown user's password is checked against a dummy hash): no user enumeration.
/// - Failures count per account and per address in the store (every server process shares
///   them); past `accountLimit` or `addressLimit` in `window`, attempts are refused as
///   `throttled` before any check, until old failures leave the window. A success clears the
///   account's failures. Each failure and success is an audit line.
/// - A new password (first login with a code) must pass `PasswordHash.check`.
/// - The token opens the one container asked for, with the user's role there, for
///   `AccessPolicy.defaultTokenLifetime`; a user who is not a member gets `notAMember` (after
///   the credentials were right, so this says nothing to someone who does not know them).
public struct LoginService: Sendable {
    public let store: any AccessStore
    private let now: @Sendable () -> Int64

    public static let window: Int64 = 15 * 60
    public static let accountLimit = 10
    public static let addressLimit = 30

    public init(store: any AccessStore, now: @escaping @Sendable () -> Int64 = AccessControl.unixNow) {
        self.store = store
        self.now = now
    }

    public typealias Request = LoginRequest
    public typealias Grant = LoginGrant

    public enum LoginRefusal: Error, Equatable, Sendable {
        case wrongCredentials
        /// The TOTP code is missing (the user has TOTP) — said only after the password was right.
        case totpNeeded
        case throttled(retryAfter: Int64)
        case notAMember
        case badRequest(String)
    }

    public func login(_ request: Request, address: String?) async throws(SyncServerError) -> Result<Grant, LoginRefusal>
    {
        guard AccountName.isValid(request.user), ContainerName.isValid(request.container) else {
            return .failure(.badRequest("the user or container name is not valid"))
        }
        guard AccessLabel.isValid(request.device), !request.device.isEmpty else {
            return .failure(.badRequest("the device name must be 1-200 bytes without control characters"))
        }
        let time = now()
        let accountKey = "user:\(request.user)"
        let addressKey = "address:\(address ?? "unknown")"
        if let wait = try await throttle(accountKey: accountKey, addressKey: addressKey, at: time) {
            try await audit(.loginFailed, request, address, result: "throttled")
            return .failure(.throttled(retryAfter: wait))
        }
        // A new password is checked before an enrolment code is spent on it.
        var newPasswordHash: String?
        if request.enrolment != nil {
            guard let password = request.newPassword else {
                return .failure(.badRequest("a first login with an enrolment code sets a password (newPassword)"))
            }
            do throws(CredentialError) {
                try PasswordHash.check(newPassword: password)
                newPasswordHash = try PasswordHash.make(password)
            } catch {
                return .failure(.badRequest(error.description))
            }
        }
        let user = try await store.user(named: request.user)
        var checked = false
        if let code = request.enrolment {
            checked = try await takeEnrolment(code, for: request.user, at: time)
            PasswordHash.dummyVerify(code)
        } else if let password = request.password {
            if let hash = user?.passwordHash {
                checked = PasswordHash.verify(password, against: hash)
            } else {
                PasswordHash.dummyVerify(password)
            }
        }
        guard checked, var account = user, account.disabled == nil else {
            return try await refuse(request, address, accountKey, addressKey, at: time)
        }
        if request.enrolment == nil, let secret = account.totpSecret {
            guard let code = request.totp else { return .failure(.totpNeeded) }
            guard let step = TOTP.verify(code: code, secret: secret, at: time, lastAcceptedStep: account.totpLastStep)
            else {
                return try await refuse(request, address, accountKey, addressKey, at: time)
            }
            account.totpLastStep = step
        }
        if let newPasswordHash { account.passwordHash = newPasswordHash }
        if account != user { _ = try await store.updateUser(account) }
        try await store.clearFailures(key: accountKey, before: time - Self.window)
        guard let role = try await store.roles(user: account.name)[request.container] else {
            try await audit(.login, request, address, result: "not a member")
            return .failure(.notAMember)
        }
        return .success(try await issue(for: account.name, role: role, request, address, at: time))
    }

    /// Seconds to wait when either key had too many failures in the window; nil otherwise.
    private func throttle(accountKey: String, addressKey: String, at time: Int64) async throws(SyncServerError)
        -> Int64?
    {
        let since = time - Self.window
        let account = try await store.failures(key: accountKey, since: since)
        let address = try await store.failures(key: addressKey, since: since)
        return account >= Self.accountLimit || address >= Self.addressLimit ? Self.window : nil
    }

    /// Takes `code` if it is `user`'s: a code is stored under the digest of the user's name and
    /// the code together, so a wrong name neither finds nor spends another user's code.
    private func takeEnrolment(_ code: String, for user: String, at time: Int64) async throws(SyncServerError) -> Bool {
        guard code.utf8.count <= 100 else { return false }
        let digest = TokenFormat.digest(of: AccountAdmin.enrolmentKey(user: user, code: code))
        return try await store.takeEnrolment(digest: digest, at: time) == user
    }

    private func refuse(
        _ request: Request, _ address: String?, _ accountKey: String, _ addressKey: String, at time: Int64
    ) async throws(SyncServerError) -> Result<Grant, LoginRefusal> {
        try await store.noteFailure(key: accountKey, at: time)
        try await store.noteFailure(key: addressKey, at: time)
        try await audit(.loginFailed, request, address, result: "refused")
        return .failure(.wrongCredentials)
    }

    private func issue(
        for user: String, role: AccessRole, _ request: Request, _ address: String?, at time: Int64
    ) async throws(SyncServerError) -> Grant {
        var device = DeviceRecord(id: TokenFormat.newID(), user: user, name: request.device, created: time)
        while !(try await store.insertDevice(device)) { device.id = TokenFormat.newID() }
        let token = TokenFormat.newToken()
        let expires = time + AccessPolicy.defaultTokenLifetime
        var record = TokenRecord(
            id: TokenFormat.newID(), user: user, device: device.id, containers: [request.container], role: role,
            label: "login from \(request.device)", created: time, expires: expires)
        while !(try await store.insertToken(record, digest: TokenFormat.digest(of: token))) {
            record.id = TokenFormat.newID()
        }
        try await audit(.login, request, address, result: "ok: device \(device.id), token \(record.id)")
        return Grant(
            token: token, tokenID: record.id, device: device.id, user: user, container: request.container, role: role,
            expires: expires)
    }

    private func audit(
        _ action: AuditAction, _ request: Request, _ address: String?, result: String
    ) async throws(SyncServerError) {
        try await store.appendAudit(
            AuditRecord(
                time: now(), container: request.container, actor: "user:\(request.user)", address: address,
                action: action.rawValue, target: "device:\(request.device)", result: result))
    }
}
