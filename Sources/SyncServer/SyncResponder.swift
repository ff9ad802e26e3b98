import HTTPTypes
import Hummingbird
import Logging
import SyncBackend

/// The server's one Hummingbird responder: routes by `Endpoint`, authenticates, checks the
/// container, and hands over to the endpoint's handler (`SyncResponder+*.swift`).
///
/// Order of checks (each failure answers at once, and nothing is stored):
/// 1. `GET /v1/health`, `POST /v1/login` and the share link endpoints need no token
///    (`SyncResponder+Login`, `SyncResponder+Links`: a link's secret opens them);
/// 2. every other request needs a valid token (`401`, before anything is said about the path);
/// 3. the path must be an endpoint (`404 notFound`) with this method (`405`, with `Allow`);
/// 4. `NAME` must be a valid container name (`400`), one the token opens (`403`), with a role
///    the endpoint needs (`403`: `Endpoint.requiredRole`), and exist (`404 notFound`);
/// 5. a `SyncFS-Container-ID` header, if present, must be the container's ID (`412
///    containerMismatch`: the client synced with another container under this name);
/// 6. room for the request's body in the token's, container's and server's budgets (`429`,
///    `503`; `BodyBudget`; a chunk upload or a batch of chunks also takes an upload slot);
/// 7. the endpoint's own parameters, headers and body (`400`, `413`, `422`; `503` when decoding a
///    JSON body would pass the server's memory budget).
///
/// It never throws: every failure is a `WireFailure` answered with the protocol's JSON body.
/// Each request is logged at debug level (method, path, status, duration).
struct SyncResponder: HTTPResponder {
    typealias Context = SyncRequestContext

    let tokens: any TokenAuthority
    let containers: any ContainerSource
    let shutdown: ShutdownSignal
    /// Request bodies in flight per token, container and server, and chunk upload slots
    /// (`ServerLimits`): beyond a token's or container's share `429`, beyond the server's `503`.
    let bodies: BodyBudget
    /// Memory for decoding JSON bodies (and encoding their answers); beyond it `503`.
    let decoding: MemoryBudget
    /// The containers' storage quotas; nil when none is set.
    let quotas: QuotaBook?
    /// Logs outages of the storage behind the containers (`503 storageUnavailable` answers).
    let outages: StorageOutageLog
    /// The bandwidth limits on chunk bytes; nil when none is set.
    var bandwidth: ServerBandwidth? = nil
    /// Whether the batch endpoints are served and listed in `ContainerInfo.features`; false only
    /// for tests that play a server older than them (their paths then answer as on that server).
    var servesBatches = true
    /// Where audit lines go (commit summaries, refusals); nil when the tokens are not an
    /// `AccessControl`'s (tests with a token authority of their own).
    var audit: AuditLog? = nil
    /// Logins (`POST /v1/login`), over the same store; nil as `audit` is (then `404`).
    var logins: LoginService? = nil
    /// Share links (`/v1/links/…`) and the admin endpoints, over the same store; nil as `audit`
    /// is (then `404`).
    var links: LinkService? = nil

    /// The web page (every path outside `/v1/`); nil as `audit` is (then those paths answer as
    /// the protocol's unknown endpoints).
    var web: WebPages? = nil

    /// Set on every response to a request whose token was valid; `ConnectionGuard` takes it off
    /// (it is never sent) and counts the connection as authenticated from then on.
    static let authenticatedMarker = HTTPField.Name("SyncFS-Internal-Authenticated")!

    /// Where the link endpoints are (`SyncResponder+Links`).
    static let linkPaths = "/v1/links/"

    /// `path` as the log may show it: a link's secret cut to its first 8 hex digits.
    static func loggable(_ path: String) -> String {
        guard path.hasPrefix(linkPaths) else { return path }
        let rest = path.dropFirst(linkPaths.count)
        let secret = rest.prefix { $0 != "/" }
        return linkPaths + secret.prefix(12) + "…" + rest.dropFirst(secret.count)
    }

    /// `SyncFS-Container-ID`.
    static let containerIDHeader = HTTPField.Name(WireProtocol.containerIDHeader)!

    /// What a handler gets: the request, its endpoint's placeholders, the container.
    struct Call: Sendable {
        let request: Request
        let name: String
        let captures: [String: String]
        /// The query parameters, already checked against the endpoint's list.
        let query: [String: String]
        let container: any Container
        /// The token's grant and its role in this container.
        let grant: AccessGrant
        let role: AccessRole
        /// The bearer token (for the long poll's recheck) and the peer's address.
        let token: String
        let address: String?
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        var response: Response
        var authenticated = false
        if let web, WebPages.serves(request.uri.path) {
            response = await web.respond(request, address: context.remoteAddress, signedIn: &authenticated)
        } else {
            do {
                response = try await answer(request, address: context.remoteAddress, authenticated: &authenticated)
            } catch {
                if error.code == .storageUnavailable { outages.refused(error.message) }
                response = error.response
            }
        }
        // An answer past the token check that is not a server error: the storage answered.
        if authenticated, response.status.code < 500 { outages.served() }
        if authenticated { response.headers[Self.authenticatedMarker] = "1" }
        if request.uri.path.hasPrefix(Self.linkPaths), response.headers[.cacheControl] == nil {
            Self.markPrivate(&response)
        }
        let elapsed = ContinuousClock.now - started
        ServerMetrics.answered(
            method: request.method, path: request.uri.path, status: Int(response.status.code), elapsed: elapsed)
        context.logger.debug(
            "\(request.method.rawValue) \(Self.loggable(request.uri.path)) \(response.status.code)",
            metadata: ["duration": "\(elapsed)"])
        return response
    }

    private func answer(
        _ request: Request, address: String?, authenticated: inout Bool
    ) async throws(WireFailure) -> Response {
        let path = request.uri.path
        let resolution = RouteResolution.resolve(
            method: request.method.rawValue, path: path,
            endpoints: servesBatches ? Endpoint.allCases : Endpoint.allCases.filter { !$0.isBatch })
        if case .endpoint(.health, _) = resolution {
            _ = try RequestReading.query(of: request, allowed: [])
            return JSONResponse.make(HealthStatus(status: "ok"), status: 200)
        }
        if case .endpoint(.login, _) = resolution {
            _ = try RequestReading.query(of: request, allowed: [])
            return try await login(request, address: address)
        }
        if case .endpoint(let endpoint, let captures) = resolution, endpoint.isLink {
            return await link(endpoint, secret: captures["SECRET"] ?? "", request: request, address: address)
        }
        // Only the health check's and the links' own paths are answered without a token (a wrong
        // method on them).
        var holder: (grant: AccessGrant, token: String)?
        if path != Endpoint.health.pathTemplate, !path.hasPrefix(Self.linkPaths) {
            holder = try await authenticate(request, address: address)
            authenticated = true
        }
        switch resolution {
        case .notFound:
            throw WireFailure(.notFound, "no endpoint \(path) (see doc/PROTOCOL.md)")
        case .methodNotAllowed(let allowed):
            throw WireFailure(
                .methodNotAllowed, "\(path) takes \(allowed.joined(separator: ", ")), not \(request.method.rawValue)",
                headers: [.allow: allowed.joined(separator: ", ")])
        case .endpoint(let endpoint, let captures):
            let name = captures["NAME"] ?? ""
            guard ContainerName.isValid(name) else {
                throw WireFailure(
                    .invalidRequest, "'\(name)' is not a container name (1-64 bytes of A-Z a-z 0-9 . _ -, no leading .)"
                )
            }
            guard let holder, let role = holder.grant.roles[name] else {
                if let holder { noteRefusal(holder.grant, container: name, endpoint: endpoint, address: address) }
                throw WireFailure(.forbidden, "this token is not valid for the container '\(name)'")
            }
            guard role >= endpoint.requiredRole else {
                noteRefusal(holder.grant, container: name, endpoint: endpoint, address: address)
                throw WireFailure(
                    .forbidden,
                    "this token has \(role.withArticle)'s rights in '\(name)'; \(endpoint.pathTemplate) needs "
                        + "\(endpoint.requiredRole.withArticle)'s")
            }
            guard let container = try await container(named: name) else {
                throw WireFailure(.notFound, "no container '\(name)' on this server")
            }
            if let expected = try RequestReading.singleHeader(Self.containerIDHeader, of: request),
                expected != container.containerID
            {
                throw WireFailure(
                    .containerMismatch,
                    "the container '\(name)' has the ID \(container.containerID), not \(expected) as "
                        + "\(WireProtocol.containerIDHeader) says: it is not the container this client synced with")
            }
            let query = try RequestReading.query(of: request, allowed: endpoint.queryParameters)
            let call = Call(
                request: request, name: name, captures: captures, query: query, container: container,
                grant: holder.grant, role: role, token: holder.token, address: address)
            guard let largest = endpoint.largestBody else { return try await handle(endpoint, call) }
            let grant = try reserveBody(
                of: request, largest: largest, container: name, token: holder.token, upload: endpoint.isChunkUpload)
            defer { bodies.release(grant) }
            return try await handle(endpoint, call)
        }
    }

    /// Reserves the request's body (its declared length, or `largest` without one) from the
    /// token's, the container's and the server's budget, before anything of it is read.
    private func reserveBody(
        of request: Request, largest: Int, container: String, token: String, upload: Bool
    ) throws(WireFailure) -> BodyBudget.Grant {
        let declared = (try? RequestReading.singleHeader(.contentLength, of: request)).flatMap {
            $0.flatMap(RequestReading.decimal)
        }
        return try reserve(min(declared ?? largest, largest), container: container, token: token, upload: upload)
    }

    /// Reserves `bytes` (and an upload slot if `upload`) from the budgets of `token` (a bearer
    /// token, or `link:ID` for a share link's own share), `container` and the server
    /// (`BodyBudget.reserve`).
    func reserve(_ bytes: Int, container: String, token: String, upload: Bool) throws(WireFailure) -> BodyBudget.Grant {
        try bodies.reserve(bytes, container: container, token: token, upload: upload)
    }

    /// The grant of the request's bearer token, and the token; `401` if there is none.
    private func authenticate(
        _ request: Request, address: String?
    ) async throws(WireFailure) -> (grant: AccessGrant, token: String) {
        guard let header = try RequestReading.singleHeader(.authorization, of: request) else {
            throw WireFailure.unauthorized("this request needs Authorization: Bearer TOKEN")
        }
        let scheme = WireProtocol.authorizationScheme + " "
        guard header.count > scheme.count, header.prefix(scheme.count).lowercased() == scheme.lowercased() else {
            throw WireFailure.unauthorized("the Authorization header must be Bearer TOKEN")
        }
        let token = String(header.dropFirst(scheme.count)).trimmingSpaces
        let grant: AccessGrant?
        do {
            grant = try await tokens.authenticate(token: token, address: address)
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        guard let grant else { throw WireFailure.unauthorized("the token is unknown, expired or revoked") }
        return (grant, token)
    }

    /// Queues an audit line for a request its token may not make: one per token, container and
    /// endpoint a minute, so a token holder cannot flood the log with refusals.
    private func noteRefusal(_ grant: AccessGrant, container: String, endpoint: Endpoint, address: String?) {
        let time = AccessControl.unixNow()
        guard let audit, audit.refusals.due("\(grant.tokenID) \(container) \(endpoint)", at: time) else { return }
        audit.note(
            AuditRecord(
                time: time, container: container, actor: grant.actor, address: address,
                action: AuditAction.accessRefused.rawValue, target: "\(endpoint.method) \(endpoint.pathTemplate)",
                result: grant.roles[container].map { "role \($0.rawValue)" } ?? "not a member"))
    }

    /// Queues an audit line summing up a commit request: how many changes, how many committed.
    func noteCommits(_ call: Call, changes: Int, committed: Int) {
        ServerMetrics.commits(changes: changes, committed: committed)
        audit?.note(
            AuditRecord(
                time: AccessControl.unixNow(), container: call.name, actor: call.grant.actor, address: call.address,
                action: AuditAction.commit.rawValue, target: "\(changes) change\(changes == 1 ? "" : "s")",
                result: "\(committed) committed, \(changes - committed) refused"))
    }

    /// Runs the quota check `admit`; a refusal (`quotaExceeded`) is an audit line, then thrown.
    func admitUnderQuota(_ call: Call, _ admit: () async throws(WireFailure) -> Void) async throws(WireFailure) {
        do {
            try await admit()
        } catch {
            if error.code == .quotaExceeded {
                audit?.note(
                    AuditRecord(
                        time: AccessControl.unixNow(), container: call.name, actor: call.grant.actor,
                        address: call.address, action: AuditAction.quotaRefusal.rawValue, target: "chunk upload",
                        result: error.message))
            }
            throw error
        }
    }

    /// The container `name` as its source has it now (`ContainerSource`).
    private func container(named name: String) async throws(WireFailure) -> (any Container)? {
        let containers = containers
        return try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await containers.container(named: name)
        }
    }

    private func handle(_ endpoint: Endpoint, _ call: Call) async throws(WireFailure) -> Response {
        switch endpoint {
        case .health: return JSONResponse.make(HealthStatus(status: "ok"), status: 200)
        case .login: throw WireFailure(.notFound, "/v1/login is not below a container")
        case .containerInfo: return containerInfo(call)
        case .missingChunks: return try await missingChunks(call)
        case .putChunk: return try await putChunk(call)
        case .getChunk: return try await getChunk(call)
        case .entry: return try await entry(call)
        case .commit: return try await commit(call)
        case .commitBatch: return try await commitBatch(call)
        case .commitAllOrNothing: return try await commitAllOrNothing(call)
        case .chunkBatch: return try await chunkBatch(call)
        case .changes: return try await changes(call)
        case .wait: return try await wait(call)
        case .history: return try await history(call)
        case .trash: return try await trash(call)
        case .digest: return try await digest(call)
        case .lock: return try await lock(call)
        case .unlock: return try await unlock(call)
        case .renewLocks: return try await renewLocks(call)
        case .releaseLocks: return try await releaseLocks(call)
        case .entryLocks: return try await entryLocks(call)
        case .members: return try await members(call)
        case .setMember: return try await setMember(call)
        case .removeMember: return try await removeMember(call)
        case .containerLinks: return try await containerLinks(call)
        case .createLink: return try await createLink(call)
        case .revokeLink: return try await revokeLink(call)
        case .containerAudit: return try await containerAudit(call)
        case .retention: return try await retention(call)
        case .setRetention: return try await setRetention(call)
        case .linkInfo, .linkList, .linkContent, .linkUpload:
            throw WireFailure(.notFound, "a link endpoint is opened by its secret, not a token")
        }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
