import Foundation
import HTTPTypes
import Hummingbird
import SyncBackend

/// The share link endpoints, opened by a link's secret instead of a token (doc/PROTOCOL.md
/// "Share links"; `LinkService` checks the secret, the expiry and the password):
/// - `GET /v1/links/SECRET`: what the link opens (`LinkInfo`);
/// - `GET …/list?path=P&after=C&limit=L`: a folder below a `view` link (`LinkListing`), by name
///   bytes, `C` the page before's `next`;
/// - `GET …/content?path=P`: a file below a `view` link, or a `download` link's file (no
///   `path`), streamed; each counts as one download, refused past the link's maximum;
/// - `POST …/upload?name=N`: adds a file to an `upload-only` link's folder, never replacing
///   anything (a taken name gets ` (2)`, ` (3)`, … before its extension).
///
/// Paths are `LinkPath`s below the link's own path and go only through directories: `..`, a
/// symlink on the way, a file used as a folder, anything outside the prefix is `404`, as is a
/// link whose path does not exist (now). A link's kind allows only its own endpoints (`403`).
/// Every answer carries `Cache-Control: no-store` and `Referrer-Policy: no-referrer` (the
/// secret is in the URL).
extension SyncResponder {
    /// What a valid link opens: its record, the container and a way down its tree.
    struct LinkPlace: Sendable {
        let link: LinkRecord
        let container: any Container
        let walk: TreeWalk
        let prefix: [[UInt8]]

        /// The live entry at `path` below the link's path, or `404`.
        func entry(_ path: [[UInt8]], _ what: String) async throws(WireFailure) -> RemoteEntry {
            let walk = walk
            let names = prefix + path
            let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await walk.entry(at: names)
            }
            guard let found else { throw WireFailure(.notFound, "\(what) is not there (now)") }
            return found
        }
    }

    /// A link endpoint's answer, or its refusal, with the headers every link answer carries.
    func link(_ endpoint: Endpoint, secret: String, request: Request, address: String?) async -> Response {
        var response: Response
        do {
            response = try await openedLink(endpoint, secret: secret, request: request, address: address)
        } catch {
            response = error.response
        }
        Self.markPrivate(&response)
        return response
    }

    /// `Cache-Control: no-store` and `Referrer-Policy: no-referrer`: a link's secret is in its URL.
    static func markPrivate(_ response: inout Response) {
        response.headers[.cacheControl] = "no-store"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
    }

    private func openedLink(
        _ endpoint: Endpoint, secret: String, request: Request, address: String?
    ) async throws(WireFailure) -> Response {
        guard let links else { throw WireFailure(.notFound, "this server has no share links") }
        let query = try RequestReading.query(of: request, allowed: endpoint.queryParameters)
        let password = try Self.linkPassword(of: request)
        let opened: Result<LinkRecord, LinkService.Refusal>
        do {
            opened = try await links.open(secret: secret, password: password, address: address)
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        let link = try Self.accept(opened)
        let place = try await self.place(of: link)
        switch endpoint {
        case .linkInfo: return try await linkInfo(place)
        case .linkList: return try await linkList(place, query)
        case .linkContent: return try await linkContent(place, query, address: address)
        case .linkUpload: return try await linkUpload(place, query, request, address: address)
        default: throw WireFailure(.notFound, "\(endpoint.pathTemplate) is not a link endpoint")
        }
    }

    /// The link's record, or the refusal as the protocol says it.
    private static func accept(_ opened: Result<LinkRecord, LinkService.Refusal>) throws(WireFailure) -> LinkRecord {
        switch opened {
        case .success(let link): return link
        case .failure(.unknown): throw WireFailure(.notFound, "no such link")
        case .failure(.revoked): throw WireFailure(.notFound, "this link was revoked")
        case .failure(.expired): throw WireFailure(.notFound, "this link expired")
        case .failure(.passwordNeeded):
            throw WireFailure(
                .unauthorized, "this link needs its password (HTTP Basic, any user name)",
                headers: [.wwwAuthenticate: #"Basic realm="syncfs link", charset="UTF-8""#])
        case .failure(.wrongPassword):
            throw WireFailure(
                .unauthorized, "the link's password is wrong",
                headers: [.wwwAuthenticate: #"Basic realm="syncfs link", charset="UTF-8""#])
        case .failure(.throttled(let seconds)):
            throw WireFailure(
                .tooManyRequests, "too many wrong passwords; retry later", headers: [.retryAfter: String(seconds)])
        case .failure(.busy):
            throw WireFailure(
                .unavailable, "the server is checking as many passwords as it can; retry in a moment",
                headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
        }
    }

    /// The password of `Authorization: Basic` (the part after the first `:`); nil without one,
    /// or with another scheme (a bearer token opens no link and is ignored here).
    static func linkPassword(of request: Request) throws(WireFailure) -> String? {
        guard let header = try RequestReading.singleHeader(.authorization, of: request) else { return nil }
        let scheme = "basic "
        guard header.prefix(scheme.count).lowercased() == scheme else { return nil }
        guard header.utf8.count <= 4096,
            let decoded = Data(base64Encoded: String(header.dropFirst(scheme.count))),
            let pair = String(data: decoded, encoding: .utf8), let colon = pair.firstIndex(of: ":")
        else {
            throw WireFailure(.invalidRequest, "a link's password comes as Authorization: Basic (any user name)")
        }
        return String(pair[pair.index(after: colon)...])
    }

    private func place(of link: LinkRecord) async throws(WireFailure) -> LinkPlace {
        guard ContainerName.isValid(link.container), case .success(let prefix) = LinkPath.parse(link.prefix) else {
            throw WireFailure(.storageFailure, "the link's stored record is not valid")
        }
        let containers = containers
        let name = link.container
        let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await containers.container(named: name)
        }
        guard let container = found else { throw WireFailure(.notFound, "the link's container is gone") }
        guard let tree = container as? any ContainerTree else {
            throw WireFailure(.notImplemented, "this server's containers cannot be read by path")
        }
        return LinkPlace(
            link: link, container: container, walk: TreeWalk(container: container, tree: tree), prefix: prefix.names)
    }

    /// What the link opens, which must exist now: a folder (`view` may also open a file), or a
    /// `download` link's file.
    private func linkInfo(_ place: LinkPlace) async throws(WireFailure) -> Response {
        let link = place.link
        let target = try await place.entry([], "what the link opens")
        let fits: Bool
        switch link.kind {
        case .view: fits = target.state.kind != .symlink
        case .download: fits = target.state.kind == .file
        case .uploadOnly: fits = target.state.kind == .directory
        }
        guard fits else { throw WireFailure(.notFound, "what the link opens is not a \(link.kind.opens)") }
        let name = place.prefix.last.map { String(decoding: $0, as: UTF8.self) } ?? link.container
        let left = link.kind == .uploadOnly ? nil : link.maxDownloads.map { max(0, $0 - link.downloads) }
        return JSONResponse.make(
            LinkInfo(
                kind: link.kind.rawValue, name: name, expires: link.expires, downloadsLeft: left,
                size: link.kind == .download ? target.state.size : nil),
            status: 200)
    }

    private func linkList(_ place: LinkPlace, _ query: [String: String]) async throws(WireFailure) -> Response {
        guard place.link.kind == .view else {
            throw WireFailure(.forbidden, "a \(place.link.kind.rawValue) link cannot list folders")
        }
        let path = try Self.path(query[WireProtocol.Query.path] ?? "")
        let limit = try RequestReading.integer(
            query, WireProtocol.Query.limit, in: TreePage.limits, default: WireProtocol.defaultHistoryLimit)
        var after: [UInt8]?
        if let text = query[WireProtocol.Query.after] {
            guard let name = HexName.decode(text) else {
                throw WireFailure(.invalidRequest, "'after' is the 'next' of the page before")
            }
            after = name
        }
        let folder = try await place.entry(path.names, "the folder")
        guard folder.state.kind == .directory else { throw WireFailure(.notFound, "the path is not a folder") }
        let tree = place.walk.tree
        let children = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await tree.children(of: folder.id, after: after, limit: limit)
        }
        let entries = children.map { child in
            // `path` came as text, so only the child's own name can be other bytes.
            let name = String(validating: child.state.name, as: UTF8.self)
            return LinkListingEntry(
                name: name ?? String(decoding: child.state.name, as: UTF8.self),
                path: name.map { path.names.isEmpty ? $0 : path.text + "/" + $0 },
                kind: child.state.kind.wireWord, size: child.state.kind == .file ? child.state.size : 0,
                mtime: child.state.mtime)
        }
        let next = children.count == limit ? children.last.map { HexName.encode($0.state.name) } : nil
        return JSONResponse.make(LinkListing(entries: entries, next: next), status: 200)
    }

    private func linkContent(
        _ place: LinkPlace, _ query: [String: String], address: String?
    ) async throws(WireFailure) -> Response {
        let link = place.link
        guard link.kind != .uploadOnly else { throw WireFailure(.forbidden, "an upload-only link cannot read files") }
        let path = try Self.path(query[WireProtocol.Query.path] ?? "")
        guard link.kind == .view || path.names.isEmpty else {
            throw WireFailure(.invalidRequest, "a download link opens its one file: no path")
        }
        let file = try await place.entry(path.names, "the file")
        guard file.state.kind == .file else { throw WireFailure(.notFound, "the path is not a file") }
        let first = try await Self.firstChunk(of: file, in: place.container)
        try bandwidth?.mayFetch(container: link.container)
        let ticket = try enterTransfer(link, address: address)
        let counted: Bool
        do {
            counted = try await links?.store.countDownload(link: link.id) ?? false
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        guard counted else { throw WireFailure(.notFound, "this link has no downloads left") }
        audit?.note(
            AuditRecord(
                time: AccessControl.unixNow(), container: link.container, actor: "link:\(link.id)", address: address,
                action: AuditAction.linkUse.rawValue, target: "entry:\(file.id)",
                result: "download, \(file.state.size) bytes"))
        let body = FileStream.body(
            of: file, first: first, in: place.container, named: link.container, bandwidth: bandwidth, holding: ticket)
        let name = path.names.last ?? place.prefix.last ?? []
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/octet-stream",
                .contentDisposition: ContentDisposition.attachment(name),
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                .contentSecurityPolicy: "default-src 'none'; sandbox",
            ], body: body)
    }

    /// The first chunk of `file`, read before the answer begins (nil for an empty file). A sealed
    /// chunk is a client's ciphertext, never content: `403`, nothing sent. (A sealed chunk further
    /// on ends the answer's body short: `ChunkCodec.decode` refuses it.)
    static func firstChunk(of file: RemoteEntry, in container: any Container) async throws(WireFailure)
        -> EncodedChunk?
    {
        guard let reference = file.state.manifest.first else { return nil }
        let chunk = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.chunk(reference.hash)
        }
        guard chunk.encoding != .sealed else {
            throw WireFailure(
                .forbidden, "the file is sealed (encrypted by its clients): a share link cannot serve its content")
        }
        return chunk
    }

    /// A place among the link transfers in progress (`LinkTraffic`), or `429`/`503`.
    func enterTransfer(_ link: LinkRecord, address: String?) throws(WireFailure) -> LinkTraffic.Ticket {
        guard let traffic = links?.traffic else { throw WireFailure(.notFound, "this server has no share links") }
        let retry: HTTPFields = [.retryAfter: String(ServerLimits.retryAfterSeconds)]
        switch traffic.enter(address: address, link: link.id) {
        case .success(let ticket): return ticket
        case .failure(.server):
            throw WireFailure(
                .unavailable, "the server has as many link transfers as it takes; retry in a moment", headers: retry)
        case .failure(.address):
            throw WireFailure(.tooManyRequests, "too many link transfers from this address at once", headers: retry)
        case .failure(.link):
            throw WireFailure(.tooManyRequests, "too many transfers through this link at once", headers: retry)
        }
    }

    /// Charges `bytes` of a link's transfer to the bandwidth limits, waiting (a second at a time,
    /// at most `ServerLimits`' request deadline in all) while they do not let them go: a link's
    /// answer has begun, so it is paced rather than refused.
    static func pace(
        _ bandwidth: ServerBandwidth, _ bytes: Int, _ direction: ServerBandwidth.Direction, container: String
    ) async throws {
        for _ in 0..<300 {
            do {
                try bandwidth.admit(bytes, direction, container: container)
                return
            } catch {
                try await Task.sleep(for: .seconds(1))
            }
        }
        throw WireFailure(.unavailable, "the bandwidth limits let no link transfer through")
    }

    /// `pace` for an upload's bytes, whose only failure is a `WireFailure` (a stopped task is
    /// `503`).
    static func paceUpload(_ bandwidth: ServerBandwidth, _ bytes: Int, container: String) async throws(WireFailure) {
        try await paceOrRefuse(bandwidth, bytes, .upload, container: container)
    }

    /// `pace` whose only failure is a `WireFailure` (a stopped task is `503`).
    static func paceOrRefuse(
        _ bandwidth: ServerBandwidth, _ bytes: Int, _ direction: ServerBandwidth.Direction, container: String
    ) async throws(WireFailure) {
        do {
            try await pace(bandwidth, bytes, direction, container: container)
        } catch let failure as WireFailure {
            throw failure
        } catch {
            throw WireFailure(.unavailable, "the transfer was stopped")
        }
    }

    static func path(_ text: String) throws(WireFailure) -> LinkPath {
        switch LinkPath.parse(text) {
        case .success(let path): return path
        case .failure(let why): throw WireFailure(.invalidRequest, "'\(text)' is not a path: \(why)")
        }
    }
}

extension LinkKind {
    /// What a link of this kind opens, in words.
    fileprivate var opens: String {
        switch self {
        case .view: return "folder or file"
        case .download: return "file"
        case .uploadOnly: return "folder"
        }
    }
}
