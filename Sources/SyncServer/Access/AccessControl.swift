import Foundation
import SyncBackend

/// The server's access checks over an `AccessStore` (either backend): turns a bearer token into
/// its grant (`AccessPolicy`) and records when and from where each token was last used.
///
/// Contract:
/// - Every check reads the store (no cache): a change made by any process (a revocation, a
///   disabled user, a role change) counts from the next request on; a long poll rechecks every
///   `longPollRecheck` (`SyncResponder`), so one open when the change is made ends within it.
/// - A store that cannot be read throws, never nil.
/// - "Last used" is written at most once a minute per token and process (`OncePerMinute`); failing to
///   write it never fails the request.
public final class AccessControl: TokenAuthority {
    public static let longPollRecheck: Duration = .seconds(2)

    public let store: any AccessStore
    private let now: @Sendable () -> Int64
    private let touched = OncePerMinute()

    /// `now`: Unix seconds (tests move it to expire tokens).
    public init(store: any AccessStore, now: @escaping @Sendable () -> Int64 = AccessControl.unixNow) {
        self.store = store
        self.now = now
    }

    public static func unixNow() -> Int64 { Int64(Date().timeIntervalSince1970) }

    public func authenticate(token: String, address: String?) async throws(SyncServerError) -> AccessGrant? {
        guard TokenFormat.isWellFormed(token) else { return nil }
        let grant = try await grant(digest: TokenFormat.digest(of: token))
        if let grant { await touch(grant.tokenID, address: address) }
        return grant
    }

    /// The grant of the token with this digest, read from the store now (one `standing` read).
    public func grant(digest: String) async throws(SyncServerError) -> AccessGrant? {
        guard let standing = try await store.standing(digest: digest) else { return nil }
        return AccessPolicy.grant(
            token: standing.token, user: standing.user, device: standing.device, memberships: standing.memberships,
            now: now())
    }

    private func touch(_ id: String, address: String?) async {
        let time = now()
        if touched.due(id, at: time) { try? await store.touchToken(id: id, at: time, address: address) }
    }

    /// Appends an audit line; a failure to write it is logged by the caller, never fatal to a
    /// request that already happened.
    public func audit(
        container: String?, actor: String, address: String?, action: AuditAction, target: String, result: String
    ) async throws(SyncServerError) {
        try await store.appendAudit(
            AuditRecord(
                time: now(), container: container, actor: actor, address: address, action: action.rawValue,
                target: target, result: result))
    }
}

/// What the audit log records.
public enum AuditAction: String, Codable, Sendable, CaseIterable {
    case login
    case loginFailed = "login-failed"
    case tokenCreate = "token-create"
    case tokenRevoke = "token-revoke"
    case deviceRevoke = "device-revoke"
    case userAdd = "user-add"
    case userDisable = "user-disable"
    case userEnable = "user-enable"
    case userPassword = "user-password"
    case userEnrol = "user-enrol"
    case userTOTP = "user-totp"
    case roleChange = "role-change"
    case memberRemove = "member-remove"
    case linkCreate = "link-create"
    case linkRevoke = "link-revoke"
    case linkUse = "link-use"
    case linkFailed = "link-failed"
    case commit
    case restore
    case accessRefused = "access-refused"
    case quotaRefusal = "quota-refusal"
    case gcRun = "gc-run"
    case retentionChange = "retention-change"
}
