import HTTPTypes
import Hummingbird
import SyncBackend

/// Signing in and out, the containers list and the signed-in browsers.
extension WebPages {
    func signInPage(_ request: Request, message: String?, name: String, status: HTTPResponse.Status = .ok)
        -> Response
    {
        let (secret, setCookie) = sessions.signInSecret(request)
        var page: [String: Any] = ["token": WebSessions.csrf(for: secret), "name": name]
        if let message { page["message"] = message }
        var headers: HTTPFields = [:]
        if let setCookie { headers[.setCookie] = setCookie }
        return WebResponse.html(
            templates.render("signin", PageContext(WebFrame(title: "Sign in", signed: nil), page)), status: status,
            headers: headers)
    }

    /// `POST /login`: the form's credentials through `LoginService.signIn` (its throttling, slots,
    /// TOTP and audit lines), then a new session and a redirect home. Every refusal of the
    /// credentials reads the same.
    func signIn(_ request: Request, address: String?) async throws(WireFailure) -> Response {
        try WebSessions.checkOrigin(request)
        let form = try await WebForm.read(request)
        guard sessions.signInFormIsOurs(request, token: form["csrf"]) else {
            return signInPage(
                request, message: "The sign-in form was out of date; please try again.", name: "",
                status: .forbidden)
        }
        let user = form["user"] ?? ""
        let agent = Self.agent(of: request)
        let result: Result<UserRecord, LoginService.LoginRefusal>
        do {
            result = try await logins.signIn(
                user: user, password: form["password"] ?? "",
                totp: form["totp"].flatMap { $0.isEmpty ? nil : $0 }, agent: agent, address: address)
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        let shownName = AccountName.isValid(user) ? user : ""
        switch result {
        case .success(let account):
            let cookie = try await sessions.start(user: account.name, agent: agent, address: address)
            return WebResponse.redirect(to: "/", headers: [.setCookie: cookie])
        case .failure(.totpNeeded):
            return signInPage(
                request, message: "Enter the code from your authenticator app too.", name: shownName,
                status: .unauthorized)
        case .failure(.throttled(let seconds)):
            return signInPage(
                request, message: "Too many failed attempts: try again in \(seconds / 60) minutes.", name: shownName,
                status: .tooManyRequests)
        case .failure(.busy):
            return signInPage(
                request, message: "The server is busy checking other sign-ins; try again in a moment.",
                name: shownName, status: .serviceUnavailable)
        case .failure(.wrongCredentials), .failure(.badRequest), .failure(.notAMember):
            return signInPage(
                request, message: "The user name, password or code is wrong.", name: shownName, status: .unauthorized)
        }
    }

    /// `POST /logout`: ends this browser's session.
    func signOut(_ request: Request, _ signed: WebSessions.Signed) async throws(WireFailure) -> Response {
        _ = try await WebSessions.changeForm(request, signed: signed)
        do {
            _ = try await sessions.store.revokeWebSession(
                id: signed.session.id, user: signed.session.user, at: sessions.now())
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        return WebResponse.redirect(to: "/login", headers: [.setCookie: sessions.endCookie])
    }

    /// What a browser calls itself, fit for a label: its `User-Agent` without controls, at most
    /// 200 bytes (cut at a character), "a browser" without one.
    static func agent(of request: Request) -> String {
        let raw = request.headers[.userAgent] ?? ""
        var text = ""
        for scalar in raw.unicodeScalars where scalar.value >= 0x20 && scalar.value != 0x7F {
            guard text.utf8.count + String(scalar).utf8.count <= 190 else { break }
            text.unicodeScalars.append(scalar)
        }
        let agent = "web: " + (text.isEmpty ? "a browser" : text)
        return AccessLabel.isValid(agent) ? agent : "web: a browser"
    }

    func containerList(_ signed: WebSessions.Signed) async throws(WireFailure) -> Response {
        var rows: [[String: Any]] = []
        for (name, role) in signed.roles.sorted(by: { $0.key < $1.key }) {
            let containers = containers
            let container = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await containers.container(named: name)
            }
            var row: [String: Any] = ["name": name, "role": role.rawValue, "href": WebPaths.folder(name, "")]
            let limit = quotas?.settings.limit(for: name)
            row["quota"] = limit.map(WebFormat.size) ?? "none"
            if let container {
                row["note"] = try await Self.isSealed(container) ? "encrypted: open it with its recovery key" : "browse"
                if let stats = await storageFigures.stats(of: name, container) {
                    row["size"] = WebFormat.size(stats.logicalBytes)
                    row["stored"] = WebFormat.size(stats.storedBytes)
                    if let limit, limit > 0 {
                        row["quota"] = "\(WebFormat.size(limit)) (\(min(999, stats.storedBytes * 100 / limit)) % used)"
                    }
                }
            } else {
                row["note"] = "not on this server yet"
            }
            rows.append(row)
        }
        let page: [String: Any] = ["rows": rows, "hasRows": !rows.isEmpty]
        return WebResponse.html(
            templates.render("containers", PageContext(WebFrame(title: "Containers", signed: signed), page)))
    }

    /// The user's sessions, newest first (the last 50).
    func sessionList(_ signed: WebSessions.Signed) async throws(WireFailure) -> Response {
        let records: [WebSessionRecord]
        do {
            records = try await sessions.store.webSessions(user: signed.session.user, limit: 50)
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        let time = sessions.now()
        let rows: [[String: Any]] = records.map { record in
            let live = WebSessionPolicy.isLive(record, at: time)
            let state =
                record.id == signed.session.id
                ? "this browser" : record.revoked != nil ? "signed out" : live ? "signed in" : "ended"
            var row: [String: Any] = [
                "id": record.id, "agent": record.agent, "address": record.address ?? "",
                "created": WebFormat.time(record.created).text, "lastSeen": WebFormat.time(record.lastSeen).text,
                "state": state,
            ]
            if live { row["revocable"] = true }
            return row
        }
        let (devices, tokens) = try await machines(of: signed.session.user, at: time)
        return WebResponse.html(
            templates.render(
                "sessions",
                PageContext(
                    WebFrame(title: "Your account", signed: signed),
                    ["rows": rows, "devices": devices, "tokens": tokens])))
    }

    /// The user's devices (with when a token of theirs was last used) and tokens, for the page.
    private func machines(
        of user: String, at time: Int64
    ) async throws(WireFailure) -> (devices: [[String: Any]], tokens: [[String: Any]]) {
        let store = sessions.store
        let (devices, tokens) = try await Self.adminStep { () async throws(SyncServerError) in
            (try await store.devices(user: user), try await store.tokens().filter { $0.user == user })
        }
        let deviceRows: [[String: Any]] = devices.map { device in
            let used = tokens.filter { $0.device == device.id }.compactMap(\.lastUsed).max()
            var row: [String: Any] = [
                "id": device.id, "name": device.name, "created": WebFormat.time(device.created).text,
                "lastSeen": used.map { WebFormat.time($0).text } ?? "never",
                "state": device.revoked == nil ? "active" : "revoked",
            ]
            if device.revoked == nil { row["revocable"] = true }
            return row
        }
        let tokenRows: [[String: Any]] = tokens.reversed().map { token in
            let live = token.revoked == nil && (token.expires.map { time < $0 } ?? true)
            var row: [String: Any] = [
                "id": token.id, "label": token.label, "containers": token.containers.joined(separator: ", "),
                "role": token.role.rawValue, "expires": token.expires.map { WebFormat.time($0).text } ?? "never",
                "lastUsed": token.lastUsed.map { WebFormat.time($0).text } ?? "never",
                "state": token.revoked != nil ? "revoked" : live ? "valid" : "expired",
            ]
            if live { row["revocable"] = true }
            return row
        }
        return (deviceRows, tokenRows)
    }

    /// `POST /devices/revoke` and `/tokens/revoke` (`id`): one of the user's own devices (every
    /// token made for it stops) or tokens; another user's is `404`, as an unknown one is.
    func revokeMachine(
        _ what: String, _ request: Request, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let form = try await WebSessions.changeForm(request, signed: signed)
        let id = form["id"] ?? ""
        let user = signed.session.user
        let admin = AccountAdmin(
            store: sessions.store, actor: "user:\(user)/web:\(signed.session.id)", address: signed.session.address)
        let found = try await Self.adminStep { () async throws(SyncServerError) -> Bool in
            if what == "devices" {
                guard try await admin.store.device(id: id)?.user == user else { return false }
                _ = try await admin.revokeDevice(id)
            } else {
                guard try await admin.store.tokens().contains(where: { $0.id == id && $0.user == user }) else {
                    return false
                }
                _ = try await admin.revokeToken(id)
            }
            return true
        }
        guard found else { throw WireFailure(.notFound, "you have no \(what == "devices" ? "device" : "token") \(id)") }
        return WebResponse.redirect(to: "/sessions")
    }

    /// `POST /sessions/revoke`: signs one of the user's own browsers out.
    func revokeSession(_ request: Request, _ signed: WebSessions.Signed) async throws(WireFailure) -> Response {
        let form = try await WebSessions.changeForm(request, signed: signed)
        guard let id = form["id"], id.utf8.count == 8 else { throw WireFailure(.invalidRequest, "which session?") }
        let revoked: Bool?
        do {
            revoked = try await sessions.store.revokeWebSession(id: id, user: signed.session.user, at: sessions.now())
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        guard revoked != nil else { throw WireFailure(.notFound, "you have no session \(id)") }
        if id == signed.session.id {
            return WebResponse.redirect(to: "/login", headers: [.setCookie: sessions.endCookie])
        }
        return WebResponse.redirect(to: "/sessions")
    }
}
