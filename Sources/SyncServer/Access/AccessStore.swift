import SyncBackend

/// Where a server keeps who may do what: users, devices, memberships, tokens, enrolment codes,
/// failed attempts and the audit log. Two implementations with the same semantics: the embedded
/// `TokenStore` (`ROOT/.syncfs-server/tokens.db`, SQLite) and PostgreSQL's `PostgresAccess`
/// (`syncfs_*` tables beside the containers).
///
/// Contract (every implementation):
/// - It stores and finds rows; it decides nothing. What a row means (expiry, a disabled user,
///   the lower of two roles) is `AccessPolicy`'s, in one place for both backends.
/// - Every read goes to the store (no cache): a change by another process is seen by the next call.
/// - A failure to reach the store throws (`SyncServerError` `.failed`); it is never answered as
///   "no such row". An outage must not look like a revoked token, nor a revoked token like an outage.
/// - Secrets arrive as digests or hashes only; nothing here sees a token or a password.
/// - Inserts that collide on a unique key return false (the caller draws another ID or reports
///   the name taken); updates of a missing row return nil.
public protocol AccessStore: Sendable {
    // MARK: Tokens

    /// Inserts a token with this digest; false if its ID or digest is taken.
    func insertToken(_ token: TokenRecord, digest: String) async throws(SyncServerError) -> Bool
    /// The token with this digest, revoked or not.
    func token(digest: String) async throws(SyncServerError) -> TokenRecord?
    /// The token with this digest and every row its grant depends on (`TokenStanding`), read as
    /// one (a store that can do it in one round trip should: every request reads it); nil if
    /// there is no such token. The default reads them one by one.
    func standing(digest: String) async throws(SyncServerError) -> TokenStanding?
    /// Every token ever made, oldest first.
    func tokens() async throws(SyncServerError) -> [TokenRecord]
    /// Revokes token `id`: true if it was valid, false if revoked already, nil if unknown.
    func revokeToken(id: String, at time: Int64) async throws(SyncServerError) -> Bool?
    /// Records a use of token `id` (time and address).
    func touchToken(id: String, at time: Int64, address: String?) async throws(SyncServerError)

    // MARK: Users

    /// Inserts a user; false if the name is taken.
    func insertUser(_ user: UserRecord) async throws(SyncServerError) -> Bool
    func user(named name: String) async throws(SyncServerError) -> UserRecord?
    /// Every user, by name.
    func users() async throws(SyncServerError) -> [UserRecord]
    /// Applies one change to user `name`, touching only its own columns (a concurrent change of
    /// another column is never undone): nil if there is no such user; false when an
    /// `acceptedTOTPStep` is not later than the one stored (a replay: nothing changed); else true.
    func changeUser(_ name: String, _ change: UserChange) async throws(SyncServerError) -> Bool?

    // MARK: Devices

    /// Inserts a device; false if its ID is taken.
    func insertDevice(_ device: DeviceRecord) async throws(SyncServerError) -> Bool
    func device(id: String) async throws(SyncServerError) -> DeviceRecord?
    /// The devices of `user` (every user's with nil), oldest first.
    func devices(user: String?) async throws(SyncServerError) -> [DeviceRecord]
    /// Revokes device `id`: true if it was valid, false if revoked already, nil if unknown.
    func revokeDevice(id: String, at time: Int64) async throws(SyncServerError) -> Bool?

    // MARK: Memberships

    /// Gives `user` this role in `container` (replacing any other).
    func setMembership(_ membership: MembershipRecord) async throws(SyncServerError)
    /// Removes `user` from `container`: false if they were not a member.
    func removeMembership(user: String, container: String) async throws(SyncServerError) -> Bool
    /// The members of `container` (every membership with nil), by container then user.
    func memberships(container: String?) async throws(SyncServerError) -> [MembershipRecord]
    /// `user`'s role in each container they are a member of.
    func roles(user: String) async throws(SyncServerError) -> [String: AccessRole]

    // MARK: Enrolment codes

    /// Stores a one-time enrolment code for `user` (its digest) until `expires`.
    func insertEnrolment(digest: String, user: String, expires: Int64) async throws(SyncServerError)
    /// Takes the code with this digest if it has not expired at `time`: the user it enrols; the
    /// code is gone afterwards, taken or expired (a code is good once).
    func takeEnrolment(digest: String, at time: Int64) async throws(SyncServerError) -> String?

    // MARK: Failed attempts (shared by every server process)

    /// Records a failed attempt under `key` (`user:NAME`, `address:ADDR`, `link:ID`).
    func noteFailure(key: String, at time: Int64) async throws(SyncServerError)
    /// The failed attempts under `key` since `time`.
    func failures(key: String, since time: Int64) async throws(SyncServerError) -> Int
    /// Forgets the failures under `key` (after a success), and every failure older than `before`.
    func clearFailures(key: String?, before: Int64) async throws(SyncServerError)

    // MARK: Share links

    /// Inserts a link with this digest of its secret; false if its ID or digest is taken.
    func insertLink(_ link: LinkRecord, digest: String) async throws(SyncServerError) -> Bool
    /// The link with this digest, revoked or not.
    func link(digest: String) async throws(SyncServerError) -> LinkRecord?
    /// The links of `container` (every link with nil), oldest first.
    func links(container: String?) async throws(SyncServerError) -> [LinkRecord]
    /// Revokes link `id`: true if it was valid, false if revoked already, nil if unknown.
    func revokeLink(id: String, at time: Int64) async throws(SyncServerError) -> Bool?
    /// Counts one download through link `id`, atomically: false (and nothing counted) when it
    /// has a maximum and reached it, or there is no such link.
    func countDownload(link id: String) async throws(SyncServerError) -> Bool

    // MARK: Web sessions

    /// Inserts a session with this digest of its cookie's secret; false if its ID or digest is taken.
    func insertWebSession(_ session: WebSessionRecord, digest: String) async throws(SyncServerError) -> Bool
    /// The session with this digest, revoked or not.
    func webSession(digest: String) async throws(SyncServerError) -> WebSessionRecord?
    /// The sessions of `user`, revoked and ended ones too, newest first, at most `limit`.
    func webSessions(user: String, limit: Int) async throws(SyncServerError) -> [WebSessionRecord]
    /// Revokes session `id` of `user`: true if it was valid, false if revoked already, nil if
    /// `user` has no such session (another user's session is not theirs to revoke).
    func revokeWebSession(id: String, user: String, at time: Int64) async throws(SyncServerError) -> Bool?
    /// Revokes every valid session of `user` (a new password, a disabled user); how many.
    func revokeWebSessions(user: String, at time: Int64) async throws(SyncServerError) -> Int
    /// Records a use of session `id` (time and address).
    func touchWebSession(id: String, at time: Int64, address: String?) async throws(SyncServerError)

    // MARK: Audit log

    /// Appends one line.
    func appendAudit(_ record: AuditRecord) async throws(SyncServerError)
    /// Appends several lines, in one transaction where the store can (the default appends one by one).
    func appendAudit(lines: [AuditRecord]) async throws(SyncServerError)
    /// Lines at or after `since`, of `container` if given (nil: every line), oldest first, at most `limit`.
    func audit(container: String?, since: Int64, limit: Int) async throws(SyncServerError) -> [AuditRecord]
    /// Removes the lines older than `before`; returns how many.
    func pruneAudit(before: Int64) async throws(SyncServerError) -> Int
}

extension AccessStore {
    public func appendAudit(lines: [AuditRecord]) async throws(SyncServerError) {
        for line in lines { try await appendAudit(line) }
    }
}

/// A token with the rows its grant depends on (`AccessPolicy.grant`): its user, its device and
/// the user's memberships (none of them for a container token).
public struct TokenStanding: Equatable, Sendable {
    public var token: TokenRecord
    public var user: UserRecord?
    public var device: DeviceRecord?
    /// The user's role per container.
    public var memberships: [String: AccessRole]

    public init(token: TokenRecord, user: UserRecord?, device: DeviceRecord?, memberships: [String: AccessRole]) {
        self.token = token
        self.user = user
        self.device = device
        self.memberships = memberships
    }
}

extension AccessStore {
    public func standing(digest: String) async throws(SyncServerError) -> TokenStanding? {
        guard let token = try await token(digest: digest) else { return nil }
        guard let name = token.user else {
            return TokenStanding(token: token, user: nil, device: nil, memberships: [:])
        }
        let user = try await user(named: name)
        let device: DeviceRecord?
        if let id = token.device { device = try await self.device(id: id) } else { device = nil }
        return TokenStanding(token: token, user: user, device: device, memberships: try await roles(user: name))
    }
}
