/// One signed-in browser (the web page's session), as an `AccessStore` keeps it. The cookie's
/// secret is never stored: only its SHA-256 digest (`TokenFormat.digest`).
public struct WebSessionRecord: Codable, Equatable, Sendable {
    /// The public ID, 8 hex digits: what the sessions list shows and revoke takes.
    public var id: String
    public var user: String
    public var created: Int64
    /// When it was last used (recorded at most once a minute); the idle limit counts from here.
    public var lastSeen: Int64
    /// When it stops working whatever its use (`WebSessionPolicy.absoluteLifetime` after `created`).
    public var expires: Int64
    public var revoked: Int64?
    /// The peer's address at sign-in, then at the last recorded use.
    public var address: String?
    /// What the browser called itself (its `User-Agent`, cut to 200 bytes without controls).
    public var agent: String

    public init(
        id: String, user: String, created: Int64, lastSeen: Int64, expires: Int64, revoked: Int64? = nil,
        address: String?, agent: String
    ) {
        self.id = id
        self.user = user
        self.created = created
        self.lastSeen = lastSeen
        self.expires = expires
        self.revoked = revoked
        self.address = address
        self.agent = agent
    }
}

/// How long a web session lasts: the one place both backends' sessions are judged.
public enum WebSessionPolicy {
    /// A session unused this long ends (8 hours: a working day).
    public static let idleLifetime: Int64 = 8 * 3600
    /// A session ends this long after sign-in, used or not (7 days).
    public static let absoluteLifetime: Int64 = 7 * 24 * 3600
    /// A use is recorded at most this often (a page load need not write).
    public static let touchInterval: Int64 = 60

    /// Whether `session` lets its holder in at `time`.
    public static func isLive(_ session: WebSessionRecord, at time: Int64) -> Bool {
        session.revoked == nil && time < session.expires && time < session.lastSeen + idleLifetime
    }
}
