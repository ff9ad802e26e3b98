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
/// - A new password (first login with a code) must pass `PasswordHash.check`; the code is spent
///   only when everything else was right.
/// - The password work (a hash, a verify) runs in one of `LoginSlots.limit` slots, taken after the
///   body was read and the throttle checked; without a free slot the answer is `busy`.
/// - A TOTP code is accepted once: its step is stored only if later than the last one, atomically.
/// - The token opens the one container asked for, with the user's role there, for
///   `AccessPolicy.defaultTokenLifetime`; a user who is not a member gets `notAMember` (after
///   the credentials were right, so this says nothing to someone who does not know them).
public struct LoginService: Sendable {
    public let store: any AccessStore
    private let now: @Sendable () -> Int64

    public static let window: Int64 = 15 * 60
    public static let accountLimit = 10
    public static let addressLimit = 30

    /// Logins whose password work runs now (`LoginSlots.limit`; beyond, `busy`).
    let slots = LoginSlots()
    /// When each throttled key last had its audit line.
    private let throttledLines = OncePerMinute()

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
        /// `LoginSlots.limit` logins are being checked: try again in a moment.
        case busy
    }

    public func login(_ request: Request, address: String?) async throws(SyncServerError) -> Result<Grant, LoginRefusal>
    {
        guard ContainerName.isValid(request.container) else {
            return .failure(.badRequest("the user or container name is not valid"))
        }
        let time = now()
        let account: UserRecord
        switch try await verify(request, address: address, at: time) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let user): account = user
        }
        guard let role = try await store.roles(user: account.name)[request.container] else {
            try await audit(.login, request, address, result: "not a member")
            return .failure(.notAMember)
        }
        return .success(try await issue(for: account.name, role: role, request, address, at: time))
    }

    /// The web page's sign-in: `user`'s password and TOTP code (when they have one) checked with
    /// every rule of `login` (throttling, slots, one use per TOTP code, audit lines), for a browser
    /// that calls itself `agent`. No token is made; the caller starts a web session.
    public func signIn(
        user: String, password: String, totp: String?, agent: String, address: String?
    ) async throws(SyncServerError) -> Result<UserRecord, LoginRefusal> {
        let request = Request(user: user, container: "", device: agent, password: password, totp: totp)
        return try await verify(request, address: address, at: now())
    }

    /// Checks `request`'s credentials (password, TOTP, or an enrolment code with a new password)
    /// under the throttle and a slot: the user, or the refusal (each an audit line).
    private func verify(
        _ request: Request, address: String?, at time: Int64
    ) async throws(SyncServerError) -> Result<UserRecord, LoginRefusal> {
        guard AccountName.isValid(request.user) else {
            return .failure(.badRequest("the user or container name is not valid"))
        }
        guard AccessLabel.isValid(request.device), !request.device.isEmpty else {
            return .failure(.badRequest("the device name must be 1-200 bytes without control or format characters"))
        }
        let accountKey = "user:\(request.user)"
        let addressKey = "address:\(Self.addressKey(address))"
        if let wait = try await throttle(accountKey: accountKey, addressKey: addressKey, at: time) {
            // One line per key and minute: a throttled flood does not flood the log.
            if throttledLines.due(accountKey + " " + addressKey, at: time) {
                try await audit(.loginFailed, request, address, result: "throttled")
            }
            return .failure(.throttled(retryAfter: wait))
        }
        // The password hash work holds a slot (its memory); without one, nothing is checked.
        guard slots.enter() else { return .failure(.busy) }
        let checked: Checked
        do {
            defer { slots.leave() }
            switch check(request, user: try await store.user(named: request.user)) {
            case .failure(let refusal): return .failure(refusal)
            case .success(let result): checked = result
            }
        }
        guard checked.passed || request.enrolment != nil else {
            return .failure(try await refuse(request, address, accountKey, addressKey, at: time))
        }
        // An enrolment code is spent only once everything else about the request was right.
        if let code = request.enrolment, !(try await takeEnrolment(code, for: request.user, at: time)) {
            return .failure(try await refuse(request, address, accountKey, addressKey, at: time))
        }
        guard let account = checked.user, account.disabled == nil else {
            return .failure(try await refuse(request, address, accountKey, addressKey, at: time))
        }
        if request.enrolment == nil, let secret = account.totpSecret {
            guard let code = request.totp else {
                try await audit(.loginFailed, request, address, result: "password right, TOTP code missing")
                return .failure(.totpNeeded)
            }
            // Accepted only if later than the last accepted step, atomically: a code is good once
            // even for two logins racing with it.
            guard let step = TOTP.verify(code: code, secret: secret, at: time, lastAcceptedStep: account.totpLastStep),
                try await store.changeUser(account.name, .acceptedTOTPStep(step)) == true
            else {
                return .failure(try await refuse(request, address, accountKey, addressKey, at: time))
            }
        }
        if let hash = checked.newPasswordHash { _ = try await store.changeUser(account.name, .passwordHash(hash)) }
        try await store.clearFailures(key: accountKey, before: time - Self.window)
        return .success(account)
    }

    /// What the password work found: whether the password matched (false for an enrolment
    /// login, whose code is checked after), the user, and the hash of a new password.
    private struct Checked {
        var passed: Bool
        var user: UserRecord?
        var newPasswordHash: String?
    }

    /// The CPU- and memory-heavy part of a login, under a slot: a new password's policy and hash,
    /// or the password against the stored hash (a dummy one for a user without).
    private func check(_ request: Request, user: UserRecord?) -> Result<Checked, LoginRefusal> {
        if request.enrolment != nil {
            guard let password = request.newPassword else {
                return .failure(.badRequest("a first login with an enrolment code sets a password (newPassword)"))
            }
            do throws(CredentialError) {
                try PasswordHash.check(newPassword: password)
                return .success(Checked(passed: false, user: user, newPasswordHash: try PasswordHash.make(password)))
            } catch {
                return .failure(.badRequest(error.description))
            }
        }
        guard let password = request.password else { return .success(Checked(passed: false, user: user)) }
        guard let hash = user?.passwordHash else {
            PasswordHash.dummyVerify(password)
            return .success(Checked(passed: false, user: user))
        }
        return .success(Checked(passed: PasswordHash.verify(password, against: hash), user: user))
    }

    /// The address failures count under: an IPv6 address by its /64 (one host usually has a whole
    /// /64), any other as it is.
    static func addressKey(_ address: String?) -> String {
        guard let address else { return "unknown" }
        guard address.contains(":") else { return address }
        var groups = address.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if let gap = groups.firstIndex(of: ""), address.contains("::") {
            let missing = 8 - groups.filter { !$0.isEmpty }.count
            groups.removeAll { $0.isEmpty }
            groups.insert(contentsOf: Array(repeating: "0", count: max(0, missing)), at: min(gap, groups.count))
        }
        return groups.prefix(4).joined(separator: ":") + "::/64"
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
    ) async throws(SyncServerError) -> LoginRefusal {
        try await store.noteFailure(key: accountKey, at: time)
        try await store.noteFailure(key: addressKey, at: time)
        try await audit(.loginFailed, request, address, result: "refused")
        return .wrongCredentials
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
                time: now(), container: request.container.isEmpty ? nil : request.container,
                actor: "user:\(request.user)", address: address,
                action: action.rawValue, target: "device:\(request.device)", result: result))
    }
}
