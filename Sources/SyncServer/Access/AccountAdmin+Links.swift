import SyncBackend
import SyncCredentials

/// Share links, as an administrator makes them (`syncfs-mount link …`, the admin endpoints).
extension AccountAdmin {
    /// What a new link is to be.
    public struct LinkOrder: Sendable {
        public var container: String
        /// `/`-separated names below the container's root (`LinkPath`); empty for the root.
        public var prefix: String
        public var kind: LinkKind
        /// A password its users must give (kept only as its hash); nil for none.
        public var password: String?
        public var expiry: Expiry
        /// For `view` and `download` links: how many downloads in all; nil for no limit.
        public var maxDownloads: Int64?
        public var label: String

        public init(
            container: String, prefix: String, kind: LinkKind, password: String? = nil, expiry: Expiry = .standard,
            maxDownloads: Int64? = nil, label: String = ""
        ) {
            self.container = container
            self.prefix = prefix
            self.kind = kind
            self.password = password
            self.expiry = expiry
            self.maxDownloads = maxDownloads
            self.label = label
        }
    }

    /// How long a link lasts without `--expires`.
    public static let defaultLinkLifetime: Int64 = 30 * 86_400
    /// The most downloads a link can be given.
    public static let largestDownloadLimit: Int64 = 1_000_000

    /// Makes a link; returns its row and its secret, which is never stored and shown only now.
    /// The prefix need not exist yet (a link to a missing place answers `404` until it does).
    public func createLink(_ order: LinkOrder) async throws(SyncServerError) -> (record: LinkRecord, secret: String) {
        try Self.checkContainer(order.container)
        let prefix: LinkPath
        switch LinkPath.parse(order.prefix) {
        case .success(let path): prefix = path
        case .failure(let why): throw SyncServerError(.badInput, "'\(order.prefix)' is not a link path: \(why)")
        }
        if order.kind == .download, prefix.names.isEmpty {
            throw SyncServerError(.badInput, "a download link names one file (--path)")
        }
        if let limit = order.maxDownloads {
            guard order.kind != .uploadOnly else {
                throw SyncServerError(.badInput, "an upload-only link has no downloads to limit")
            }
            guard (1...Self.largestDownloadLimit).contains(limit) else {
                throw SyncServerError(.badInput, "a download limit is 1...\(Self.largestDownloadLimit)")
            }
        }
        guard AccessLabel.isValid(order.label) else {
            throw SyncServerError(.badInput, "a label has at most 200 bytes and no control characters")
        }
        var passwordHash: String?
        if let password = order.password {
            do throws(CredentialError) {
                try PasswordHash.check(newPassword: password)
                passwordHash = try PasswordHash.make(password)
            } catch {
                throw SyncServerError(.badInput, "the link password: \(error.description)")
            }
        }
        let created = now()
        let expires: Int64?
        switch order.expiry {
        case .standard: expires = created + Self.defaultLinkLifetime
        case .never: expires = nil
        case .after(let seconds):
            guard (1...AccessPolicy.longestTokenLifetime).contains(seconds) else {
                throw SyncServerError(.badInput, "a link lasts at most 365 days (or --no-expiry)")
            }
            expires = created + seconds
        }
        let secret = TokenFormat.newLinkSecret()
        for _ in 0..<16 {
            let record = LinkRecord(
                id: TokenFormat.newID(), container: order.container, prefix: prefix.text, kind: order.kind,
                passwordHash: passwordHash, created: created, expires: expires, maxDownloads: order.maxDownloads,
                createdBy: actor, label: order.label)
            if try await store.insertLink(record, digest: TokenFormat.digest(of: secret)) {
                try await self.record(
                    .linkCreate, container: order.container, target: "link:\(record.id)", result: order.kind.rawValue)
                return (record, secret)
            }
        }
        throw SyncServerError(.failed, "cannot find a free link ID")
    }

    /// The links of `container` (every link with nil), oldest first.
    public func links(container: String?) async throws(SyncServerError) -> [LinkRecord] {
        if let container { try Self.checkContainer(container) }
        return try await store.links(container: container)
    }

    /// Revokes link `id` at once (its next request is refused). False if it was revoked already.
    /// `container`: the container the link must be of (an admin of one container cannot revoke
    /// another's); nil only for the server's own administrator, who may revoke any.
    @discardableResult
    public func revokeLink(_ id: String, container: String?) async throws(SyncServerError) -> Bool {
        let unknown = SyncServerError(.badInput, "no link with ID '\(id)' (see `link list`)")
        guard TokenFormat.isWellFormedID(id),
            let owner = try await store.links(container: container).first(where: { $0.id == id })?.container,
            let revoked = try await store.revokeLink(id: id, at: now())
        else { throw unknown }
        if revoked { try await record(.linkRevoke, container: owner, target: "link:\(id)") }
        return revoked
    }
}
