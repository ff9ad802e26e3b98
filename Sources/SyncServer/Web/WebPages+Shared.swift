import HTTPTypes
import Hummingbird
import SyncBackend

/// A share link's public page, `/s/SECRET` (for people without an account): a `view` link's
/// folder (`?path=P` below it) with its files' downloads, a `download` link's file, or an
/// `upload-only` link's drop box. The link is checked by `LinkService` as its protocol endpoints
/// check it (expiry, revocation, password, throttling); a password comes as HTTP Basic, which
/// the browser asks for on the `401`. Downloads and uploads go to the link's own endpoints
/// (`/v1/links/SECRET/…`), which count downloads and bound uploads. Every answer carries
/// `Referrer-Policy: no-referrer` and `Cache-Control: no-store` (the secret is in the URL).
extension WebPages {
    static let sharedPrefix = "/s/"

    func sharedPage(_ request: Request, address: String?) async -> Response {
        var response: Response
        do {
            response = try await shared(request, address: address)
        } catch {
            response = failurePage(error, signed: nil)
            if error.code == .unauthorized {
                response.headers[.wwwAuthenticate] = #"Basic realm="syncfs link", charset="UTF-8""#
            }
        }
        SyncResponder.markPrivate(&response)
        return response
    }

    private func shared(_ request: Request, address: String?) async throws(WireFailure) -> Response {
        guard let links else { throw WireFailure(.notFound, "this server has no share links") }
        guard request.method == .get || request.method == .head else {
            throw WireFailure(.methodNotAllowed, "a link's page takes GET", headers: [.allow: "GET"])
        }
        let secret = String(request.uri.path.dropFirst(Self.sharedPrefix.count))
        let query = try RequestReading.query(of: request, allowed: ["path", "after"])
        let opened: Result<LinkRecord, LinkService.Refusal>
        do {
            opened = try await links.open(
                secret: secret, password: try SyncResponder.linkPassword(of: request), address: address)
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        let link: LinkRecord
        switch opened {
        case .success(let record): link = record
        case .failure(.passwordNeeded), .failure(.wrongPassword):
            throw WireFailure(.unauthorized, "this link needs its password")
        case .failure(.throttled(let seconds)):
            throw WireFailure(
                .tooManyRequests, "too many wrong passwords; retry later", headers: [.retryAfter: String(seconds)])
        case .failure(.busy):
            throw WireFailure(.unavailable, "the server is busy; retry in a moment", headers: [.retryAfter: "1"])
        case .failure(.unknown), .failure(.revoked), .failure(.expired):
            throw WireFailure(.notFound, "this link does not work (any more): it may have expired or been revoked")
        }
        let endpoint = WebPaths.linkPrefix + secret
        let page = Self.sharedPrefix + secret
        guard ContainerName.isValid(link.container), case .success(let prefix) = LinkPath.parse(link.prefix) else {
            throw WireFailure(.storageFailure, "the link's stored record is not valid")
        }
        let containers = containers
        let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await containers.container(named: link.container)
        }
        guard let container = found, let tree = container as? any ContainerTree else {
            throw WireFailure(.notFound, "what the link opens is not there (now)")
        }
        let walk = TreeWalk(container: container, tree: tree)
        let path = link.kind == .view ? try Self.formPath(query["path"] ?? "") : LinkPath(names: [])
        let entry = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await walk.entry(at: prefix.names + path.names)
        }
        guard let entry else { throw WireFailure(.notFound, "what the link opens is not there (now)") }
        let title = (path.names.last ?? prefix.names.last).map { String(decoding: $0, as: UTF8.self) } ?? link.container
        var context: [String: Any] = ["heading": title, "note": Self.note(link)]
        switch (link.kind, entry.state.kind) {
        case (.uploadOnly, .directory):
            context["dropBox"] = endpoint + "/upload"
        case (.download, .file), (.view, .file):
            context["download"] =
                endpoint + "/content" + WebPaths.queryString(path.names.isEmpty ? [] : [("path", path.text)])
            context["size"] = WebFormat.size(entry.state.size)
        case (.view, .directory):
            var after: [UInt8]?
            if let text = query["after"] {
                guard let name = HexName.decode(text) else {
                    throw WireFailure(.invalidRequest, "'after' is not a name")
                }
                after = name
            }
            let children = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await tree.children(of: entry.id, after: after, limit: WebFolderView.pageSize)
            }
            context["listing"] = true
            context["rows"] = children.filter { $0.state.kind != .symlink }.map { child in
                Self.sharedRow(child, below: path, page: page, endpoint: endpoint)
            }
            if children.count == WebFolderView.pageSize, let last = children.last {
                context["next"] =
                    page
                    + WebPaths.queryString(
                        (path.names.isEmpty ? [] : [("path", path.text)]) + [("after", HexName.encode(last.state.name))]
                    )
            }
            var crumbs: [[String: Any]] = [["name": title == link.container ? link.container : "shared", "href": page]]
            for index in path.names.indices {
                let text = LinkPath(names: Array(path.names[...index])).text
                crumbs.append([
                    "name": String(decoding: path.names[index], as: UTF8.self),
                    "href": page + WebPaths.queryString([("path", text)]),
                ])
            }
            crumbs[crumbs.count - 1]["href"] = nil
            context["crumbs"] = crumbs
            context["hasCrumbs"] = !path.names.isEmpty
        default:
            throw WireFailure(.notFound, "what the link opens is not there (now)")
        }
        return WebResponse.html(templates.render("shared", PageContext(WebFrame(title: title, signed: nil), context)))
    }

    private static func sharedRow(
        _ child: RemoteEntry, below folder: LinkPath, page: String, endpoint: String
    ) -> [String: Any] {
        let state = child.state
        let modified = WebFormat.time(nanoseconds: state.mtime)
        var row: [String: Any] = [
            "name": String(decoding: state.name, as: UTF8.self), "kind": state.kind == .directory ? "folder" : "file",
            "size": state.kind == .file ? WebFormat.size(state.size) : "", "modified": modified.text,
            "iso": modified.iso,
        ]
        if let text = String(validating: state.name, as: UTF8.self) {
            let path = folder.names.isEmpty ? text : folder.text + "/" + text
            row["href"] =
                state.kind == .directory
                ? page + WebPaths.queryString([("path", path)])
                : endpoint + "/content" + WebPaths.queryString([("path", path)])
        }
        return row
    }

    private static func note(_ link: LinkRecord) -> String {
        var note: String
        switch link.kind {
        case .view: note = "Shared with you: browse and download."
        case .download: note = "A file shared with you."
        case .uploadOnly: note = "A drop box: send files to its owner."
        }
        if let expires = link.expires { note += " The link works until \(WebFormat.time(expires).text)." }
        if link.kind != .uploadOnly, let maximum = link.maxDownloads {
            note += " Downloads left: \(max(0, maximum - link.downloads))."
        }
        return note
    }
}
