import SyncBackend
import SyncCredentials
import Synchronization

/// Opening a share link: its secret (and its password, when it has one) for its record, on
/// either backend's `AccessStore`. Shared by the link endpoints (`SyncResponder+Links`) and tests.
///
/// Contract:
/// - A secret that is malformed or unknown is `unknown`; a revoked one `revoked`; one past its
///   expiry `expired` (the holder of a secret learns only about that one link).
/// - A password is checked only for a link that is still valid. Failures count in the store
///   per link and per address (the address count is shared with logins); past `linkLimit` or
///   `LoginService.addressLimit` in `LoginService.window`, every attempt is `throttled` before
///   any check, even with the right password. Each failure is an audit line (a throttled key one
///   a minute).
/// - The password work runs in one of `LoginSlots.limit` slots of its own; without a free one
///   the answer is `busy`. A right password is remembered for `RecentPasswords.lifetime` (by
///   the digest of the link, its stored hash and the password), so browsing a link costs one
///   hash, not one per request; only the throttle's reads come before it.
/// - Nothing here counts a download (`AccessStore.countDownload`, by the endpoint that sends).
public struct LinkService: Sendable {
    public let store: any AccessStore
    private let now: @Sendable () -> Int64

    public static let linkLimit = 10

    let slots = LoginSlots()
    /// The link transfers in progress (`LinkTraffic`), for every link of this server process.
    let traffic = LinkTraffic()
    private let throttledLines = OncePerMinute()
    /// Passwords recently found right, so that browsing a link does not hash on every request.
    private let recentlyRight = RecentPasswords()

    public init(store: any AccessStore, now: @escaping @Sendable () -> Int64 = AccessControl.unixNow) {
        self.store = store
        self.now = now
    }

    public enum Refusal: Error, Equatable, Sendable {
        case unknown
        case revoked
        case expired
        /// The link has a password and none was given.
        case passwordNeeded
        case wrongPassword
        case throttled(retryAfter: Int64)
        case busy
    }

    /// The link `secret` opens, if `password` (nil: none given) is right for it.
    public func open(secret: String, password: String?, address: String?) async throws(SyncServerError)
        -> Result<LinkRecord, Refusal>
    {
        guard TokenFormat.isWellFormedLinkSecret(secret),
            let link = try await store.link(digest: TokenFormat.digest(of: secret))
        else { return .failure(.unknown) }
        let time = now()
        if link.revoked != nil { return .failure(.revoked) }
        if let expires = link.expires, expires <= time { return .failure(.expired) }
        guard let hash = link.passwordHash else { return .success(link) }
        let linkKey = "link:\(link.id)"
        let addressKey = "address:\(LoginService.addressKey(address))"
        let since = time - LoginService.window
        let linkFailures = try await store.failures(key: linkKey, since: since)
        let addressFailures = try await store.failures(key: addressKey, since: since)
        if linkFailures >= Self.linkLimit || addressFailures >= LoginService.addressLimit {
            if throttledLines.due(linkKey + " " + addressKey, at: time) {
                try await audit(link, address, result: "throttled")
            }
            return .failure(.throttled(retryAfter: LoginService.window))
        }
        guard let password else { return .failure(.passwordNeeded) }
        let remembered = TokenFormat.digest(of: link.id + "\n" + hash + "\n" + password)
        if recentlyRight.contains(remembered, at: time) { return .success(link) }
        guard slots.enter() else { return .failure(.busy) }
        let matches: Bool
        do {
            defer { slots.leave() }
            matches = password.utf8.count <= 1024 && PasswordHash.verify(password, against: hash)
        }
        guard matches else {
            try await store.noteFailure(key: linkKey, at: time)
            try await store.noteFailure(key: addressKey, at: time)
            try await audit(link, address, result: "wrong password")
            return .failure(.wrongPassword)
        }
        recentlyRight.insert(remembered, at: time)
        return .success(link)
    }

    private func audit(_ link: LinkRecord, _ address: String?, result: String) async throws(SyncServerError) {
        try await store.appendAudit(
            AuditRecord(
                time: now(), container: link.container, actor: "link:\(link.id)", address: address,
                action: AuditAction.linkFailed.rawValue, target: "link:\(link.id)", result: result))
    }
}

/// Digests of link passwords found right lately, each for `lifetime` seconds, at most `capacity`
/// (then all are forgotten: the next requests hash again).
final class RecentPasswords: Sendable {
    static let lifetime: Int64 = 300
    static let capacity = 10_000
    private let known = Mutex<[String: Int64]>([:])

    func contains(_ digest: String, at time: Int64) -> Bool {
        known.withLock { known in
            guard let until = known[digest] else { return false }
            if until > time { return true }
            known[digest] = nil
            return false
        }
    }

    func insert(_ digest: String, at time: Int64) {
        known.withLock { known in
            if known.count >= Self.capacity { known.removeAll() }
            known[digest] = time + Self.lifetime
        }
    }
}
