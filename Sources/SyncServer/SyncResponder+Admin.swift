import Foundation
import Hummingbird
import SyncBackend

/// A container's admin endpoints (`Endpoint.requiredRole` is `admin`): its members, its share
/// links and its audit log, each change made by `AccountAdmin` as the token's actor and written
/// to the audit log. Only this container is ever read or changed: a user is named, never
/// created, and a link of another container is `404`.
extension SyncResponder {
    private func admin(_ call: Call) throws(WireFailure) -> AccountAdmin {
        guard let store = links?.store else { throw WireFailure(.notFound, "this server has no user accounts") }
        return AccountAdmin(store: store, actor: call.grant.actor, address: call.address)
    }

    /// `badInput` is the caller's (`400`); anything else the store's.
    private func adminStep<T>(_ step: () async throws(SyncServerError) -> T) async throws(WireFailure) -> T {
        do {
            return try await step()
        } catch {
            if error.kind == .badInput { throw WireFailure(.invalidRequest, error.description) }
            throw WireFailure.tokenStoreUnreadable(error)
        }
    }

    func members(_ call: Call) async throws(WireFailure) -> Response {
        let admin = try admin(call)
        let members = try await adminStep { () async throws(SyncServerError) in
            try await admin.members(container: call.name)
        }
        return JSONResponse.make(MemberList(members: members), status: 200)
    }

    func setMember(_ call: Call) async throws(WireFailure) -> Response {
        let admin = try admin(call)
        let change = try await RequestReading.smallJSON(MemberChange.self, from: call.request)
        try await adminStep { () async throws(SyncServerError) in
            try await admin.setMember(user: change.user, container: call.name, role: change.role)
        }
        return JSONResponse.make(
            MembershipRecord(user: change.user, container: call.name, role: change.role), status: 200)
    }

    func removeMember(_ call: Call) async throws(WireFailure) -> Response {
        let admin = try admin(call)
        let user = call.captures["USER"] ?? ""
        let removed = try await adminStep { () async throws(SyncServerError) in
            try await admin.removeMember(user: user, container: call.name)
        }
        guard removed else { throw WireFailure(.notFound, "'\(user)' is not a member of '\(call.name)'") }
        return JSONResponse.empty(status: 204)
    }

    func containerLinks(_ call: Call) async throws(WireFailure) -> Response {
        let admin = try admin(call)
        let links = try await adminStep { () async throws(SyncServerError) in
            try await admin.links(container: call.name)
        }
        return JSONResponse.make(LinkList(links: links.map(LinkSummary.init)), status: 200)
    }

    func createLink(_ call: Call) async throws(WireFailure) -> Response {
        let admin = try admin(call)
        let asked = try await RequestReading.smallJSON(LinkOrderRequest.self, from: call.request)
        let expiry: AccountAdmin.Expiry
        switch (asked.expiresIn, asked.noExpiry ?? false) {
        case (nil, false): expiry = .standard
        case (nil, true): expiry = .never
        case (let seconds?, false): expiry = .after(seconds)
        case (_?, true): throw WireFailure(.invalidRequest, "a link has expiresIn or noExpiry, not both")
        }
        let order = AccountAdmin.LinkOrder(
            container: call.name, prefix: asked.path, kind: asked.kind, password: asked.password, expiry: expiry,
            maxDownloads: asked.maxDownloads, label: asked.label ?? "")
        // A password's hash holds a slot (its memory), as a login's does.
        let slots = asked.password == nil ? nil : links?.slots
        if let slots, !slots.enter() {
            throw WireFailure(
                .unavailable, "the server is checking as many passwords as it can; retry in a moment",
                headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
        }
        defer { slots?.leave() }
        let (record, secret) = try await adminStep { () async throws(SyncServerError) in
            try await admin.createLink(order)
        }
        var response = JSONResponse.make(
            CreatedLink(link: LinkSummary(record), secret: secret, path: Self.linkPaths + secret), status: 201)
        Self.markPrivate(&response)
        return response
    }

    func revokeLink(_ call: Call) async throws(WireFailure) -> Response {
        let admin = try admin(call)
        let id = call.captures["LINK"] ?? ""
        let revoked = try await adminStep { () async throws(SyncServerError) -> Bool? in
            guard try await admin.links(container: call.name).contains(where: { $0.id == id }) else { return nil }
            return try await admin.revokeLink(id, container: call.name)
        }
        guard let revoked else { throw WireFailure(.notFound, "'\(call.name)' has no link '\(id)'") }
        return JSONResponse.make(RevokeAnswer(revoked: revoked), status: 200)
    }

    func containerAudit(_ call: Call) async throws(WireFailure) -> Response {
        let admin = try admin(call)
        let since = try RequestReading.integer(call.query, WireProtocol.Query.since, in: 0...(1 << 40), default: 0)
        let limit = try RequestReading.integer(
            call.query, WireProtocol.Query.limit, in: 1...1000, default: WireProtocol.defaultHistoryLimit)
        let lines = try await adminStep { () async throws(SyncServerError) in
            try await admin.store.audit(container: call.name, since: Int64(since), limit: limit)
        }
        return JSONResponse.make(AuditPage(lines: lines), status: 200)
    }
}

/// `GET|PUT /v1/containers/NAME/retention`: how long the container keeps replaced versions and
/// the trash (`RetentionPolicy`); any member reads it, only an admin changes it. A container
/// whose backend keeps no history answers `501`.
extension SyncResponder {
    private static func collectable(_ call: Call) throws(WireFailure) -> any CollectableContainer {
        guard let container = call.container as? any CollectableContainer else {
            throw WireFailure(.notImplemented, "this container keeps no history, so it has no retention")
        }
        return container
    }

    func retention(_ call: Call) async throws(WireFailure) -> Response {
        let container = try Self.collectable(call)
        let policy = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.retention()
        }
        return JSONResponse.make(policy, status: 200)
    }

    func setRetention(_ call: Call) async throws(WireFailure) -> Response {
        let container = try Self.collectable(call)
        let policy = try await RequestReading.smallJSON(RetentionPolicy.self, from: call.request)
        if let problem = policy.problem { throw WireFailure(.invalidRequest, problem) }
        try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.setRetention(policy)
        }
        guard let store = links?.store else { return JSONResponse.make(policy, status: 200) }
        do {
            try await store.appendAudit(
                AuditRecord(
                    time: AccessControl.unixNow(), container: call.name, actor: call.grant.actor,
                    address: call.address, action: AuditAction.retentionChange.rawValue, target: "retention",
                    result: policy.description))
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        return JSONResponse.make(policy, status: 200)
    }
}
