import HTTPTypes
import Hummingbird
import SyncBackend

/// The page's changes: a new folder, a rename, a move, a delete. Each is a `POST` form with the
/// session's CSRF token, needs an editor's role, and is an ordinary commit (device
/// `web:SESSION`), so mounts apply it as they apply another device's. A delete of a folder
/// deletes what is below it first, in batches; deleted entries stay in the container's history
/// (the trash) as any deletion does.
extension WebPages {
    func change(
        _ action: String, _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let form = try await editorForm(request, open, signed)
        let path = try Self.formPath(form["path"] ?? "")
        let device = "web:\(signed.session.id)"
        // The folder the page shows after the change: where the entry is now.
        let shown: String
        switch action {
        case "mkdir":
            let folder = try await open.entry(path)
            let name = try Self.newName(form["name"])
            let state = EntryState(
                parent: folder.id, name: name, kind: .directory, mode: 0o755, mtime: WallClock.nanoseconds(), size: 0)
            try await commit(
                CommitRequest(id: FileID.random(), baseVersion: 0, change: .put(state), device: device), open)
            shown = path.text
        case "rename", "move":
            guard !path.names.isEmpty else {
                throw WireFailure(.invalidRequest, "the container's root stays where it is")
            }
            let entry = try await open.entry(path)
            var state = entry.state
            if action == "rename" {
                state.name = try Self.newName(form["name"])
            } else {
                let target = try await open.entry(try Self.formPath(form["to"] ?? ""))
                guard target.state.kind == .directory else { throw WireFailure(.invalidRequest, "move into a folder") }
                state.parent = target.id
            }
            state.mtime = entry.state.mtime
            try await commit(
                CommitRequest(id: entry.id, baseVersion: entry.version, change: .put(state), device: device), open)
            shown = action == "rename" ? Self.parent(path).text : try await pathText(of: state.parent, in: open)
        case "delete":
            guard !path.names.isEmpty else {
                throw WireFailure(.invalidRequest, "the container's root cannot be deleted")
            }
            let entry = try await open.entry(path)
            try await delete(entry, device: device, open, signed)
            shown = Self.parent(path).text
        default:
            throw WireFailure(.notFound, "there is no change '\(action)'")
        }
        note(action, signed, open)
        return WebResponse.redirect(to: WebPaths.folder(open.name, shown))
    }

    /// Commits one change; a refusal is said in words.
    func commit(_ request: CommitRequest, _ open: OpenContainer) async throws(WireFailure) {
        let container = open.container
        let outcome = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.commit(request)
        }
        try Self.accept(outcome)
    }

    static func accept(_ outcome: CommitOutcome) throws(WireFailure) {
        switch outcome {
        case .committed: return
        case .nameTaken: throw WireFailure(.invalidRequest, "that name is taken in that folder")
        case .parentMissing: throw WireFailure(.notFound, "the folder is not there (now)")
        case .versionConflict:
            throw WireFailure(.invalidRequest, "it was changed meanwhile (by another device): reload and try again")
        case .directoryNotEmpty: throw WireFailure(.invalidRequest, "the folder is not empty (now)")
        case .wouldCreateCycle: throw WireFailure(.invalidRequest, "a folder cannot move into itself")
        case .chunksMissing: throw WireFailure(.invalidRequest, "some of the file's content is not uploaded yet")
        }
    }

    /// Deletes `entry` and, for a folder, everything below it (deepest first, in batches).
    private func delete(
        _ entry: RemoteEntry, device: String, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) {
        let ticket = try heavy(signed)
        defer { withExtendedLifetime(ticket) {} }
        var doomed = [entry]
        if entry.state.kind == .directory {
            doomed += try await Self.zipItems(below: entry, in: open, keepLinks: true).map(\.entry)
        }
        let requests = doomed.reversed().map {
            CommitRequest(id: $0.id, baseVersion: $0.version, change: .delete, device: device)
        }
        let container = open.container
        var start = 0
        while start < requests.count {
            let batch = Array(requests[start..<min(start + CommitBatch.maximumChanges, requests.count)])
            let outcomes = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await container.commit(batch: batch)
            }
            for outcome in outcomes { try Self.accept(outcome) }
            start += batch.count
        }
    }

    /// The path of the folder `id` from the container's root ("" for the root).
    private func pathText(of id: FileID?, in open: OpenContainer) async throws(WireFailure) -> String {
        var names: [[UInt8]] = []
        var next = id
        let container = open.container
        while let id = next, id != .root, names.count < LinkPath.maximumDepth {
            let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await container.entry(id)
            }
            guard let entry = found else { break }
            names.insert(entry.state.name, at: 0)
            next = entry.state.parent
        }
        return LinkPath(names: names).text
    }

    /// An audit line for a change made on the page.
    func note(_ action: String, _ signed: WebSessions.Signed, _ open: OpenContainer) {
        audit?.note(
            AuditRecord(
                time: AccessControl.unixNow(), container: open.name,
                actor: "user:\(signed.session.user)/web:\(signed.session.id)", address: signed.session.address,
                action: AuditAction.commit.rawValue, target: "web \(action)", result: "ok"))
    }

    /// The context of the rename, move and delete forms for the entry at `path`.
    static func changeForms(_ container: String, _ path: LinkPath) -> [String: Any] {
        [
            "rename": WebPaths.action(container, "rename"), "move": WebPaths.action(container, "move"),
            "delete": WebPaths.action(container, "delete"), "path": path.text,
            "name": path.names.last.map { String(decoding: $0, as: UTF8.self) } ?? "", "parent": parent(path).text,
        ]
    }

    static func formPath(_ text: String) throws(WireFailure) -> LinkPath {
        switch LinkPath.parse(text) {
        case .success(let path): return path
        case .failure(let why): throw WireFailure(.invalidRequest, "that is not a path: \(why)")
        }
    }

    /// A name typed into the page: one name, no control or bidirectional characters.
    static func newName(_ text: String?) throws(WireFailure) -> [UInt8] {
        switch LinkPath.name((text ?? "").trimmingCharacters(in: .whitespaces)) {
        case .failure(let why): throw WireFailure(.invalidRequest, "that is not a name: \(why)")
        case .success(let name):
            if let problem = UploadName.problem(name) { throw WireFailure(.invalidRequest, problem) }
            return name
        }
    }

    static func parent(_ path: LinkPath) -> LinkPath { LinkPath(names: Array(path.names.dropLast())) }

    static func child(_ path: LinkPath, _ name: [UInt8]) -> String { LinkPath(names: path.names + [name]).text }
}
