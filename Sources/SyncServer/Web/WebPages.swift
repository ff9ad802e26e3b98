import HTTPTypes
import Hummingbird
import Mustache
import SyncBackend
import SyncSealed

/// The web page: server-rendered HTML on the sync server's port, for people at a browser
/// (doc/WEB.md). Every path outside `/v1/` is the page's (`WebPaths` lists them).
///
/// Contract:
/// - Signed out, every page but the sign-in form and the assets redirects to `/login`.
/// - Signed in (`WebSessions`), a container's pages need the user's membership now (`403`
///   otherwise, the same words for a container that does not exist); every change is a `POST`
///   with the session's CSRF token from this origin.
/// - Paths come as the `path` query parameter and are checked as share links' are (`LinkPath`:
///   no `.`, `..` or empty names); the walk goes through live folders only (`TreeWalk`).
/// - A sealed (end-to-end encrypted) container is opened in the browser only, from key material
///   the user types there (`WebPages+Sealed.swift`); every other page of it is refused.
/// - Refusals are pages with the status and a plain message; nothing of a request is echoed
///   unescaped.
struct WebPages: Sendable {
    let sessions: WebSessions
    let logins: LoginService
    let containers: any ContainerSource
    let templates: WebTemplates
    let audit: AuditLog?
    /// The bandwidth limits on chunk bytes, which downloads through the page count against.
    let bandwidth: ServerBandwidth?
    /// Request bodies in flight (uploads count against the session's share, `web:SESSION`).
    let bodies: BodyBudget
    /// The containers' storage quotas; nil when none is set.
    let quotas: QuotaBook?
    /// Share links, for their public pages (`/s/SECRET`).
    let links: LinkService?
    /// The heavy requests in progress (a folder read, a download, a zip, a delete): at most 32 on
    /// the server, 8 from one address and 4 of one session (`LinkTraffic`, a session as its link).
    let work = LinkTraffic(perServer: 32, perAddress: 8, perLink: 4)
    /// The containers list's sizes, measured at most once a minute per container.
    let storageFigures = WebStorageFigures()

    /// Whether `path` is the page's (everything but the protocol's `/v1/…`).
    static func serves(_ path: String) -> Bool { !path.hasPrefix("/v1/") && path != "/v1" }

    /// The answer to a request of the page. `signedIn` is set when the request had a live session.
    func respond(_ request: Request, address: String?, signedIn: inout Bool) async -> Response {
        if request.uri.path.hasPrefix(Self.sharedPrefix) { return await sharedPage(request, address: address) }
        var signed: WebSessions.Signed?
        do {
            signed = try await sessions.current(request, address: address)
            signedIn = signed != nil
            return try await route(request, address: address, signed: signed)
        } catch {
            return failurePage(error, signed: signed)
        }
    }

    private func route(
        _ request: Request, address: String?, signed: WebSessions.Signed?
    ) async throws(WireFailure) -> Response {
        let path = request.uri.path
        let method = request.method
        switch (method, path) {
        case (.get, WebAssets.stylePath): return WebResponse.asset(WebAssets.style, contentType: "text/css")
        case (.get, WebAssets.scriptPath): return WebResponse.asset(WebAssets.script, contentType: "text/javascript")
        case (.get, WebAssets.sealedScriptPath):
            return WebResponse.asset(WebSealedScript.text, contentType: "text/javascript")
        case (.get, "/login"):
            if signed != nil { return WebResponse.redirect(to: "/") }
            return signInPage(request, message: nil, name: "")
        case (.post, "/login"): return try await signIn(request, address: address)
        default: break
        }
        guard let signed else {
            guard method == .get || method == .head else {
                throw WireFailure(.unauthorized, "your session ended: sign in again")
            }
            return WebResponse.redirect(to: "/login")
        }
        switch (method, path) {
        case (.get, "/"): return try await containerList(signed)
        case (.post, "/logout"): return try await signOut(request, signed)
        case (.get, "/sessions"): return try await sessionList(signed)
        case (.post, "/sessions/revoke"): return try await revokeSession(request, signed)
        case (.post, "/devices/revoke"): return try await revokeMachine("devices", request, signed)
        case (.post, "/tokens/revoke"): return try await revokeMachine("tokens", request, signed)
        default: break
        }
        guard let place = try ContainerPlace.parse(path) else {
            throw WireFailure(.notFound, "there is no page \(path)")
        }
        let container = try await openContainer(place.container, signed)
        if container.isSealed { return try await sealedPage(request, container, signed, page: place.page) }
        switch (method, place.page) {
        case (.get, ""), (.head, ""): return try await folderPage(request, container, signed)
        case (.get, "file"), (.head, "file"): return try await filePage(request, container, signed)
        case (.get, "raw"): return try await rawContent(request, container, signed, address: address)
        case (.get, "zip"): return try await zipDownload(request, container, signed, address: address)
        case (.head, "raw"), (.head, "zip"):
            // A HEAD would read the content for nothing (the body is dropped, not the work).
            throw WireFailure(.methodNotAllowed, "a download takes GET", headers: [.allow: "GET"])
        case (.get, "trash"), (.head, "trash"): return try await trashPage(request, container, signed)
        case (.post, "restore"): return try await restoreVersion(request, container, signed)
        case (.get, "admin"), (.head, "admin"): return try await adminPage(container, signed)
        case (.post, "set-member"), (.post, "remove-member"), (.post, "create-link"), (.post, "revoke-link"):
            return try await adminChange(place.page, request, container, signed)
        case (.post, "undelete"): return try await undelete(request, container, signed)
        case (.post, "mkdir"), (.post, "rename"), (.post, "move"), (.post, "delete"):
            return try await change(place.page, request, container, signed)
        case (.post, "missing"), (.put, "chunk"), (.post, "commit"):
            return try await upload(place.page, request, container, signed)
        default: throw WireFailure(.notFound, "there is no page \(method.rawValue) \(path)")
        }
    }

    /// A place among the heavy requests in progress (`work`), or `429`/`503` with `Retry-After`.
    func heavy(_ signed: WebSessions.Signed) throws(WireFailure) -> LinkTraffic.Ticket {
        let retry: HTTPFields = [.retryAfter: String(ServerLimits.retryAfterSeconds)]
        switch work.enter(address: signed.session.address, link: "web:\(signed.session.id)") {
        case .success(let ticket): return ticket
        case .failure(.server):
            throw WireFailure(
                .unavailable, "the server is as busy as it lets the page be; retry in a moment", headers: retry)
        case .failure(.address), .failure(.link):
            throw WireFailure(
                .tooManyRequests, "you have as many downloads and listings running as one may", headers: retry)
        }
    }

    /// `/c/NAME/PAGE`: the container's name (percent-decoded, checked) and the page.
    struct ContainerPlace {
        let container: String
        let page: String

        static func parse(_ path: String) throws(WireFailure) -> ContainerPlace? {
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0].isEmpty, parts[1] == "c" else { return nil }
            guard let name = String(parts[2]).removingPercentEncoding, ContainerName.isValid(name) else {
                throw WireFailure(.notFound, "there is no such container")
            }
            return ContainerPlace(container: name, page: String(parts[3]))
        }
    }

    /// A container the signed-in user may read, opened.
    struct OpenContainer: Sendable {
        let name: String
        let role: AccessRole
        let container: any Container
        let walk: TreeWalk
        /// End-to-end encrypted: only `sealedPage`'s pages serve it, opened in the browser.
        let isSealed: Bool

        /// The live entry at `path`, or `404`.
        func entry(_ path: LinkPath) async throws(WireFailure) -> RemoteEntry {
            let walk = walk
            let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await walk.entry(at: path.names)
            }
            guard let found else { throw WireFailure(.notFound, "'\(path.text)' is not there (now)") }
            return found
        }
    }

    private func openContainer(_ name: String, _ signed: WebSessions.Signed) async throws(WireFailure) -> OpenContainer
    {
        // The same words whether the container does not exist or is not the user's.
        let refusal = WireFailure(.forbidden, "you are not a member of a container '\(name)'")
        guard let role = signed.roles[name] else { throw refusal }
        let containers = containers
        let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await containers.container(named: name)
        }
        guard let container = found else { throw refusal }
        guard let tree = container as? any ContainerTree else {
            throw WireFailure(.notImplemented, "this server's containers cannot be read by path")
        }
        return OpenContainer(
            name: name, role: role, container: container, walk: TreeWalk(container: container, tree: tree),
            isSealed: try await Self.isSealed(container))
    }

    /// Whether `container` is sealed: its ledger's first entry is where every sealed container has it.
    static func isSealed(_ container: any Container) async throws(WireFailure) -> Bool {
        try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.entry(LedgerEntry.fileID(of: 1)) != nil
        }
    }

    /// The `path` query parameter (the container's root without one).
    static func path(of request: Request, allowed: Set<String>) throws(WireFailure) -> (LinkPath, [String: String]) {
        let query = try RequestReading.query(of: request, allowed: allowed.union(["path"]))
        switch LinkPath.parse(query["path"] ?? "") {
        case .success(let path): return (path, query)
        case .failure(let why): throw WireFailure(.invalidRequest, "that is not a path: \(why)")
        }
    }

    // MARK: Failures

    func failurePage(_ failure: WireFailure, signed: WebSessions.Signed?) -> Response {
        let status = HTTPResponse.Status(code: failure.code.status)
        let heading = status.code == 404 ? "Not found" : status.code == 403 ? "Not allowed" : "This did not work"
        let frame = WebFrame(title: heading, signed: signed)
        var headers = failure.headers
        headers[.wwwAuthenticate] = nil
        return WebResponse.html(
            templates.render("failure", PageContext(frame, ["heading": heading, "message": failure.message])),
            status: status, headers: headers)
    }
}

/// A page's context: the frame's fields and the page's own, as Mustache looks them up. A field
/// that is absent (or nil) makes a section not render.
struct PageContext: MustacheParent {
    let frame: WebFrame
    let page: [String: Any]

    init(_ frame: WebFrame, _ page: [String: Any]) {
        self.frame = frame
        self.page = page
    }

    func child(named name: String) -> Any? {
        switch name {
        case "title": return frame.title
        case "user": return frame.user
        case "csrf": return frame.csrf
        case "css": return frame.css
        case "js": return frame.js
        default: return page[name]
        }
    }
}
