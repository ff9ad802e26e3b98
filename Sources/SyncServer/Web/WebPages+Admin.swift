import HTTPTypes
import Hummingbird
import SyncBackend

/// A container's admin page (`/c/NAME/admin`, admins only): its members and their roles, its
/// share links (create, revoke), and its audit log. Every change goes through `AccountAdmin` as
/// the signed-in user's actor (`user:NAME/web:SESSION`) and is an audit line, as the admin
/// endpoints' are; only this container is ever read or changed.
extension WebPages {
    /// The audit log shows the newest `auditShown` lines of the last `auditDays` days
    /// (`syncfs-mount audit` reads all of it).
    static let auditShown = 200
    static let auditDays: Int64 = 7

    func adminPage(
        _ open: OpenContainer, _ signed: WebSessions.Signed, created: String? = nil
    ) async throws(WireFailure) -> Response {
        let admin = try administrator(open, signed)
        let (members, links, lines) = try await Self.adminStep { () async throws(SyncServerError) in
            (
                try await admin.members(container: open.name), try await admin.links(container: open.name),
                try await admin.store.audit(
                    container: open.name, since: AccessControl.unixNow() - Self.auditDays * 86_400, limit: 10_000)
            )
        }
        let time = sessions.now()
        var page: [String: Any] = [
            "crumbs": Self.crumbs(open.name, LinkPath(names: []), linkLast: true), "container": open.name,
            "setMember": WebPaths.action(open.name, "set-member"),
            "removeMember": WebPaths.action(open.name, "remove-member"),
            "createLink": WebPaths.action(open.name, "create-link"),
            "revokeLink": WebPaths.action(open.name, "revoke-link"),
            "members": members.map { member -> [String: Any] in
                [
                    "user": member.user, "role": member.role.rawValue,
                    "roles": AccessRole.allCases.map { ["value": $0.rawValue, "chosen": $0 == member.role] },
                ]
            },
            "links": links.reversed().map { link -> [String: Any] in
                let live = link.revoked == nil && (link.expires.map { time < $0 } ?? true)
                var row: [String: Any] = [
                    "id": link.id, "label": link.label, "kind": link.kind.rawValue,
                    "prefix": link.prefix.isEmpty ? "(all)" : link.prefix,
                    "expires": link.expires.map { WebFormat.time($0).text } ?? "never",
                    "downloads": String(link.downloads) + (link.maxDownloads.map { " of \($0)" } ?? ""),
                    "state": link.revoked != nil ? "revoked" : live ? "live" : "expired",
                ]
                if live { row["live"] = true }
                return row
            },
            "audit": lines.suffix(Self.auditShown).reversed().map { line -> [String: Any] in
                [
                    "time": WebFormat.time(line.time).text, "actor": line.actor, "address": line.address ?? "",
                    "action": line.action, "target": line.target, "result": line.result,
                ]
            },
            "auditCount": String(min(lines.count, Self.auditShown)),
        ]
        if let created { page["created"] = created }
        if let accounting = open.container as? any CollectableContainer {
            let stats = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await accounting.storageStats()
            }
            page["storage"] = [
                "live": String(stats.liveEntries), "logical": WebFormat.size(stats.logicalBytes),
                "stored": WebFormat.size(stats.storedBytes),
                "quota": quotas?.settings.limit(for: open.name).map(WebFormat.size) ?? "none",
                "trashed": String(stats.trashedEntries), "versions": String(stats.keptVersions),
            ]
        }
        return WebResponse.html(
            templates.render("admin", PageContext(WebFrame(title: "Run \(open.name)", signed: signed), page)))
    }

    /// `POST /c/NAME/set-member` (`user`, `role`), `remove-member` (`user`), `create-link`,
    /// `revoke-link` (`id`).
    func adminChange(
        _ action: String, _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let form = try await WebSessions.changeForm(request, signed: signed)
        let admin = try administrator(open, signed)
        switch action {
        case "set-member":
            guard let role = form["role"].flatMap(AccessRole.init(rawValue:)) else {
                throw WireFailure(.invalidRequest, "a role is viewer, editor or admin")
            }
            let user = form["user"] ?? ""
            try await Self.adminStep { () async throws(SyncServerError) in
                try await admin.setMember(user: user, container: open.name, role: role)
            }
        case "remove-member":
            let user = form["user"] ?? ""
            let removed = try await Self.adminStep { () async throws(SyncServerError) in
                try await admin.removeMember(user: user, container: open.name)
            }
            guard removed else { throw WireFailure(.notFound, "'\(user)' is not a member of '\(open.name)'") }
        case "create-link":
            let secret = try await createLink(form, admin, open)
            return try await adminPage(open, signed, created: Self.sharedPrefix + secret)
        case "revoke-link":
            let id = form["id"] ?? ""
            let revoked = try await Self.adminStep { () async throws(SyncServerError) -> Bool? in
                guard try await admin.links(container: open.name).contains(where: { $0.id == id }) else { return nil }
                return try await admin.revokeLink(id, container: open.name)
            }
            guard revoked != nil else { throw WireFailure(.notFound, "'\(open.name)' has no link '\(id)'") }
        default:
            throw WireFailure(.notFound, "there is no change '\(action)'")
        }
        return WebResponse.redirect(to: WebPaths.action(open.name, "admin"))
    }

    private func createLink(_ form: WebForm, _ admin: AccountAdmin, _ open: OpenContainer) async throws(WireFailure)
        -> String
    {
        guard let kind = form["kind"].flatMap(LinkKind.init(rawValue:)) else {
            throw WireFailure(.invalidRequest, "a link's kind is view, download or upload-only")
        }
        let days = form["days"].flatMap { $0.isEmpty ? nil : Int64($0) }
        if let days, !(1...365).contains(days) { throw WireFailure(.invalidRequest, "a link lasts 1 to 365 days") }
        let maximum = form["max"].flatMap { $0.isEmpty ? nil : Int64($0) }
        let password = form["password"].flatMap { $0.isEmpty ? nil : $0 }
        let order = AccountAdmin.LinkOrder(
            container: open.name, prefix: form["path"] ?? "", kind: kind, password: password,
            expiry: days.map { .after($0 * 86_400) } ?? .standard, maxDownloads: maximum, label: form["label"] ?? "")
        // A password's hash holds a slot (its memory), as a sign-in's does.
        if password != nil, !logins.slots.enter() {
            throw WireFailure(
                .unavailable, "the server is checking as many passwords as it can; retry in a moment",
                headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
        }
        defer { if password != nil { logins.slots.leave() } }
        let (_, secret) = try await Self.adminStep { () async throws(SyncServerError) in
            try await admin.createLink(order)
        }
        return secret
    }

    /// The signed-in user's `AccountAdmin` for `open`, which they must run (`403` otherwise).
    private func administrator(_ open: OpenContainer, _ signed: WebSessions.Signed) throws(WireFailure) -> AccountAdmin
    {
        guard open.role == .admin else {
            throw WireFailure(.forbidden, "you are \(open.role.withArticle) in '\(open.name)': only its admins run it")
        }
        return AccountAdmin(
            store: sessions.store, actor: "user:\(signed.session.user)/web:\(signed.session.id)",
            address: signed.session.address)
    }

    /// `badInput` is the user's (`400`); anything else the store's.
    static func adminStep<T>(_ step: () async throws(SyncServerError) -> T) async throws(WireFailure) -> T {
        do {
            return try await step()
        } catch {
            if error.kind == .badInput { throw WireFailure(.invalidRequest, error.description) }
            throw WireFailure.tokenStoreUnreadable(error)
        }
    }
}
