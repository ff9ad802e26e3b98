import Hummingbird
import SyncBackend

/// A folder: breadcrumbs, a name filter, sorting by name, size or time, and pages of
/// `WebFolderView.pageSize` entries.
extension WebPages {
    func folderPage(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let (path, query) = try Self.path(of: request, allowed: ["sort", "order", "filter", "page"])
        let view = try WebFolderView(query)
        let folder = try await open.entry(path)
        guard folder.state.kind == .directory else {
            return WebResponse.redirect(to: WebPaths.file(open.name, path.text))
        }
        let ticket = try heavy(signed)
        let children = try await Self.children(of: folder.id, in: open)
        withExtendedLifetime(ticket) {}
        let listing = view.arrange(children.entries)
        let first = (view.page - 1) * WebFolderView.pageSize
        guard first < max(listing.count, 1) else { throw WireFailure(.notFound, "there is no page \(view.page)") }
        let shown = listing[first..<min(first + WebFolderView.pageSize, listing.count)]
        let rows = shown.map { Self.row($0, in: open.name, below: path) }
        let heading = path.names.last.map { String(decoding: $0, as: UTF8.self) } ?? open.name
        var page: [String: Any] = [
            "crumbs": Self.crumbs(open.name, path, linkLast: false), "heading": heading,
            "here": WebPaths.folder(open.name, ""), "sort": view.sort.rawValue,
            "order": view.descending ? "desc" : "asc",
            "filter": view.filter, "zip": WebPaths.zip(open.name, path.text), "rows": rows,
            "trashPage": WebPaths.trash(open.name, before: nil),
            "summary": Self.summary(
                shown: shown.count, from: first, of: listing.count, all: children.entries.count,
                truncated: children.truncated),
        ]
        if !path.names.isEmpty { page["path"] = path.text }
        if open.role == .admin { page["adminPage"] = WebPaths.action(open.name, "admin") }
        if open.role.canWrite {
            page["canWrite"] = true
            page["mkdir"] = WebPaths.action(open.name, "mkdir")
            page["pathText"] = path.text
            page["container"] = open.name
            if !path.names.isEmpty { page["changes"] = Self.changeForms(open.name, path) }
        }
        for sort in WebFolderView.Sort.allCases {
            let descending = view.sort == sort ? !view.descending : sort != .name
            page["by\(sort.label)"] = WebPaths.folder(
                open.name, path.text, query: view.query(sort: sort, descending: descending, page: 1))
            page["\(sort.rawValue)Sort"] = view.sort == sort ? (view.descending ? "descending" : "ascending") : "none"
        }
        if view.page > 1 {
            page["previous"] = WebPaths.folder(open.name, path.text, query: view.query(page: view.page - 1))
        }
        if first + WebFolderView.pageSize < listing.count {
            page["next"] = WebPaths.folder(open.name, path.text, query: view.query(page: view.page + 1))
        }
        return WebResponse.html(templates.render("folder", PageContext(WebFrame(title: heading, signed: signed), page)))
    }

    /// The live children of `folder`, at most `WebFolderView.maximumEntries` (by name).
    static func children(
        of folder: FileID, in open: OpenContainer
    ) async throws(WireFailure) -> (entries: [RemoteEntry], truncated: Bool) {
        let tree = open.walk.tree
        var entries: [RemoteEntry] = []
        var after: [UInt8]?
        while entries.count < WebFolderView.maximumEntries {
            let batch = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await tree.children(of: folder, after: after, limit: TreePage.limits.upperBound)
            }
            entries += batch.filter { !$0.isDeleted }
            guard batch.count == TreePage.limits.upperBound, let last = batch.last else {
                return (entries, false)
            }
            after = last.state.name
        }
        return (Array(entries.prefix(WebFolderView.maximumEntries)), true)
    }

    private static func row(_ entry: RemoteEntry, in container: String, below folder: LinkPath) -> [String: Any] {
        let state = entry.state
        let name = String(decoding: state.name, as: UTF8.self)
        let modified = WebFormat.time(nanoseconds: state.mtime)
        var row: [String: Any] = [
            "name": name, "size": state.kind == .file ? WebFormat.size(state.size) : "", "modified": modified.text,
            "iso": modified.iso, "kind": state.kind == .directory ? "folder" : state.kind == .symlink ? "link" : "file",
        ]
        if state.kind == .file { row["bytes"] = String(state.size) }
        // A name that is not UTF-8 cannot be written in a path here: it is listed, not linked.
        if let text = String(validating: state.name, as: UTF8.self) {
            let path = folder.names.isEmpty ? text : folder.text + "/" + text
            row["href"] = state.kind == .directory ? WebPaths.folder(container, path) : WebPaths.file(container, path)
        }
        return row
    }

    /// The breadcrumbs from the container's root to `path`; the last is a link only if `linkLast`.
    static func crumbs(_ container: String, _ path: LinkPath, linkLast: Bool) -> [[String: Any]] {
        var crumbs: [[String: Any]] = [["name": container, "href": WebPaths.folder(container, "")]]
        for index in path.names.indices {
            let prefix = path.names[...index].map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
            crumbs.append([
                "name": String(decoding: path.names[index], as: UTF8.self), "href": WebPaths.folder(container, prefix),
            ])
        }
        if !linkLast { crumbs[crumbs.count - 1]["href"] = nil }
        return crumbs
    }

    private static func summary(shown: Int, from first: Int, of matching: Int, all: Int, truncated: Bool) -> String {
        var text =
            matching == 0
            ? (all == 0 ? "This folder is empty." : "No entry matches the filter.")
            : "Entries \(first + 1)–\(first + shown) of \(matching)" + (matching < all ? " matching (of \(all))" : "")
                + "."
        if truncated { text += " Only the first \(WebFolderView.maximumEntries) entries by name are listed." }
        return text
    }
}

/// How a folder is shown: its sort, order, name filter and page, read from the query.
struct WebFolderView: Sendable {
    enum Sort: String, CaseIterable, Sendable {
        case name, size, time

        var label: String {
            switch self {
            case .name: return "Name"
            case .size: return "Size"
            case .time: return "Time"
            }
        }
    }

    static let pageSize = 200
    /// The most entries of one folder the page reads (and sorts).
    static let maximumEntries = 100_000

    var sort = Sort.name
    var descending = false
    var filter = ""
    var page = 1

    init(_ query: [String: String]) throws(WireFailure) {
        if let text = query["sort"] {
            guard let sort = Sort(rawValue: text) else {
                throw WireFailure(.invalidRequest, "sort by name, size or time")
            }
            self.sort = sort
        }
        if let order = query["order"] {
            guard order == "asc" || order == "desc" else { throw WireFailure(.invalidRequest, "order is asc or desc") }
            descending = order == "desc"
        }
        filter = query["filter"] ?? ""
        guard filter.utf8.count <= 255 else { throw WireFailure(.invalidRequest, "a filter has at most 255 bytes") }
        page = try RequestReading.integer(query, "page", in: 1...1_000_000, default: 1)
    }

    /// The entries that pass the filter (a case-insensitive part of the name), folders first, in
    /// the view's order (ties by name bytes). Sorted by small keys, not by the entries themselves
    /// (an entry is large: comparing them copies their states).
    func arrange(_ entries: [RemoteEntry]) -> [RemoteEntry] {
        struct Key {
            let index: Int
            let folder: Bool
            let number: Int64
            let name: [UInt8]
        }
        let needle = filter.lowercased()
        var keys: [Key] = []
        keys.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let state = entry.state
            if !needle.isEmpty, !String(decoding: state.name, as: UTF8.self).lowercased().contains(needle) { continue }
            let number: Int64
            switch sort {
            case .name: number = 0
            case .size: number = state.size
            case .time: number = state.mtime
            }
            keys.append(Key(index: index, folder: state.kind == .directory, number: number, name: state.name))
        }
        let descending = descending
        keys.sort { left, right in
            if left.folder != right.folder { return left.folder }
            if left.number != right.number {
                return descending ? left.number > right.number : left.number < right.number
            }
            return descending
                ? right.name.lexicographicallyPrecedes(left.name) : left.name.lexicographicallyPrecedes(right.name)
        }
        return keys.map { entries[$0.index] }
    }

    /// The query of this view with another sort, order or page.
    func query(sort: Sort? = nil, descending: Bool? = nil, page: Int) -> [(String, String)] {
        var items: [(String, String)] = []
        let sort = sort ?? self.sort
        let descending = descending ?? self.descending
        if sort != .name { items.append(("sort", sort.rawValue)) }
        if descending { items.append(("order", "desc")) }
        if !filter.isEmpty { items.append(("filter", filter)) }
        if page > 1 { items.append(("page", String(page))) }
        return items
    }
}
