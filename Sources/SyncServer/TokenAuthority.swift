/// What tells the server what a bearer token may do: `AccessControl` over the embedded store
/// (`ROOT/.syncfs-server/tokens.db`) or a database's tables (`serve --database`).
///
/// Contract (every implementation):
/// - `authenticate` returns the token's grant (its role in each container it opens), or nil for a
///   token that is malformed, unknown, revoked, expired, or whose user or device is disabled or
///   revoked. A change by any process counts from the next request on.
/// - A failure to read the store throws (the server answers `503`), never nil: an outage must not
///   look like a revoked token, nor a revoked token like an outage.
/// - Only tokens' SHA-256 digests are stored (`TokenFormat.digest`); the token is seen once.
/// - `address` is the peer's, for the token's "last used" record; nil when unknown.
public protocol TokenAuthority: Sendable {
    func authenticate(token: String, address: String?) async throws(SyncServerError) -> AccessGrant?
}

/// The shape of tokens and their public IDs, shared by every token store: a token is `sfs_` and
/// 64 lowercase hex digits (32 bytes from the system's secure generator), stored only as its
/// SHA-256 in hex; a public ID is 8 hex digits.
public enum TokenFormat {
    /// A new token (shown once, never stored).
    public static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return TokenStore.tokenPrefix
            + hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// A new public ID (8 hex digits; the store retries on a collision).
    public static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<4).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// A one-time enrolment code: `enr_` and 32 lowercase hex digits (16 bytes), shown once,
    /// stored only as its digest.
    public static func newEnrolmentCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return "enr_" + hex((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// A new share link secret: `lnk_` and 64 lowercase hex digits (32 bytes), shown once,
    /// stored only as its digest.
    public static func newLinkSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return linkPrefix + hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    static let linkPrefix = "lnk_"

    /// `lnk_` and 64 lowercase hex digits.
    public static func isWellFormedLinkSecret(_ secret: String) -> Bool {
        let bytes = Array(secret.utf8)
        return bytes.count == 68 && secret.hasPrefix(linkPrefix)
            && bytes.dropFirst(4).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `sfs_` and 64 lowercase hex digits.
    public static func isWellFormed(_ token: String) -> Bool { TokenStore.isWellFormed(token) }

    /// Whether `id` can be a public ID (8 lowercase hex digits).
    public static func isWellFormedID(_ id: String) -> Bool {
        id.utf8.count == 8 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The SHA-256 of `token`, 64 lowercase hex digits: what a store keeps.
    public static func digest(of token: String) -> String { TokenStore.digest(of: token) }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
