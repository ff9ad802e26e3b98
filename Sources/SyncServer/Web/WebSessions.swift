import Crypto
import HTTPTypes
import Hummingbird
import SyncBackend
import SyncCredentials

/// The web page's signed-in browsers: a session cookie that names a `WebSessionRecord`, and the
/// checks every request of the page goes through.
///
/// Contract:
/// - The cookie holds a random secret (32 bytes, hex); the store has only its SHA-256 digest. It
///   is `HttpOnly`, `SameSite=Strict`, `Path=/`; over HTTPS also `Secure` with the `__Host-`
///   prefix (then no other host or path can set or shadow it).
/// - A session lets its holder in while `WebSessionPolicy.isLive` and its user exists and is not
///   disabled; the user's roles are read afresh on every request (a membership removed counts at
///   once).
/// - Every form that changes something carries the session's CSRF token: HMAC-SHA256 of a fixed
///   label under the cookie's secret, so only a page that had the cookie can make it. A change is
///   refused unless its token matches (constant time) and the browser's `Origin` (when sent) is
///   this server's and `Sec-Fetch-Site` (when sent) is `same-origin`.
/// - Sign-in itself is protected the same way by a short-lived pre-session cookie and its token
///   (login CSRF: another site cannot sign the browser into its own account).
struct WebSessions: Sendable {
    let store: any AccessStore
    /// Whether the page is served over HTTPS (the cookie is then `Secure` and `__Host-`).
    let secure: Bool
    let now: @Sendable () -> Int64

    init(store: any AccessStore, secure: Bool, now: @escaping @Sendable () -> Int64 = AccessControl.unixNow) {
        self.store = store
        self.secure = secure
        self.now = now
    }

    var cookieName: String { secure ? "__Host-syncfs-session" : "syncfs-session" }
    var preCookieName: String { secure ? "__Host-syncfs-signin" : "syncfs-signin" }

    /// A signed-in request: its session, the user's roles now, and the token its forms carry.
    struct Signed: Sendable {
        let session: WebSessionRecord
        let roles: [String: AccessRole]
        let csrf: String
    }

    /// The request's live session, or nil (no cookie, an unknown, ended or revoked session, a
    /// disabled user). Records the use at most once a minute.
    func current(_ request: Request, address: String?) async throws(WireFailure) -> Signed? {
        guard let secret = Self.cookie(cookieName, in: request), Self.isSecret(secret) else { return nil }
        let time = now()
        do {
            guard let session = try await store.webSession(digest: TokenFormat.digest(of: secret)),
                WebSessionPolicy.isLive(session, at: time),
                let user = try await store.user(named: session.user), user.disabled == nil
            else { return nil }
            if time - session.lastSeen >= WebSessionPolicy.touchInterval {
                try await store.touchWebSession(id: session.id, at: time, address: address)
            }
            return Signed(
                session: session, roles: try await store.roles(user: session.user), csrf: Self.csrf(for: secret))
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
    }

    /// Starts a session for `user`: its record stored, and the `Set-Cookie` value to send.
    func start(user: String, agent: String, address: String?) async throws(WireFailure) -> String {
        let time = now()
        let secret = Self.newSecret()
        var record = WebSessionRecord(
            id: TokenFormat.newID(), user: user, created: time, lastSeen: time,
            expires: time + WebSessionPolicy.absoluteLifetime, address: address, agent: agent)
        do {
            while !(try await store.insertWebSession(record, digest: TokenFormat.digest(of: secret))) {
                record.id = TokenFormat.newID()
            }
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        return setCookie(cookieName, secret, maxAge: WebSessionPolicy.absoluteLifetime)
    }

    /// The `Set-Cookie` value that removes the session cookie.
    var endCookie: String { setCookie(cookieName, "", maxAge: 0) }

    /// The pre-session secret of a sign-in form: the request's own if it has a good one, else a
    /// new one with its `Set-Cookie` value (10 minutes).
    func signInSecret(_ request: Request) -> (secret: String, setCookie: String?) {
        if let secret = Self.cookie(preCookieName, in: request), Self.isSecret(secret) { return (secret, nil) }
        let secret = Self.newSecret()
        return (secret, setCookie(preCookieName, secret, maxAge: 600))
    }

    /// Whether a sign-in form's token is the one of the request's pre-session cookie.
    func signInFormIsOurs(_ request: Request, token: String?) -> Bool {
        guard let secret = Self.cookie(preCookieName, in: request), Self.isSecret(secret), let token else {
            return false
        }
        return constantTimeEquals(Array(token.utf8), Array(Self.csrf(for: secret).utf8))
    }

    /// The submitted form of a change, read once its request passed `checkChange` with the form's
    /// `csrf` field.
    static func changeForm(_ request: Request, signed: Signed) async throws(WireFailure) -> WebForm {
        let form = try await WebForm.read(request)
        try checkChange(request, token: form["csrf"], signed: signed)
        return form
    }

    /// Refuses (`403`) a change whose token (a form's `csrf` field, a script's header) is not the
    /// session's, or that another site's page sent (`Origin`, `Sec-Fetch-Site`).
    static func checkChange(_ request: Request, token: String?, signed: Signed) throws(WireFailure) {
        try checkOrigin(request)
        guard let token, constantTimeEquals(Array(token.utf8), Array(signed.csrf.utf8)) else {
            throw WireFailure(.forbidden, "this form is out of date or was not sent by this page; reload and try again")
        }
    }

    /// Refuses (`403`) a request another site's page sent: an `Origin` that is not this server's
    /// (the request's own `Host`), or a `Sec-Fetch-Site` other than `same-origin` or `none`.
    static func checkOrigin(_ request: Request) throws(WireFailure) {
        if let site = try RequestReading.singleHeader(HTTPField.Name("Sec-Fetch-Site")!, of: request),
            site != "same-origin", site != "none"
        {
            throw WireFailure(.forbidden, "a change must come from this server's own page (Sec-Fetch-Site: \(site))")
        }
        if let origin = try RequestReading.singleHeader(HTTPField.Name("Origin")!, of: request) {
            let host = request.head.authority ?? ""
            guard origin == "http://\(host)" || origin == "https://\(host)" else {
                throw WireFailure(.forbidden, "a change must come from this server's own page (Origin: \(origin))")
            }
        }
    }

    /// The CSRF token of a cookie secret: HMAC-SHA256 of a fixed label under the secret, hex.
    static func csrf(for secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("syncfs web csrf v1".utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return TokenFormat.hex(Array(mac))
    }

    private static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return TokenFormat.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// 64 lowercase hex digits: the only shape a secret of ours has.
    private static func isSecret(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    private func setCookie(_ name: String, _ value: String, maxAge: Int64) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// The value of cookie `name` in the request's `Cookie` headers; nil if absent or sent twice.
    static func cookie(_ name: String, in request: Request) -> String? {
        var found: String?
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: " ") == name else { continue }
                guard found == nil else { return nil }
                found = String(parts[1].trimmingCharacters(in: " "))
            }
        }
        return found
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var text = self
        while text.first == set { text = text.dropFirst() }
        while text.last == set { text = text.dropLast() }
        return text
    }
}
