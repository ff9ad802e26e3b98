import HTTPTypes
import Hummingbird
import SyncBackend

/// Versions and the trash, from the container's history (`ContainerHistory`): a file's versions
/// (download any, restore one), the deleted entries (restore one). A restore is an ordinary
/// commit of the old state (`web:SESSION`), never a rewrite of history: the version it replaces
/// stays in the history in its turn.
extension WebPages {
    static let versionsShown = 50
    static let trashPage = 100

    /// The versions of `file` for its page, newest first (nil when the container keeps none).
    func versionRows(
        of file: RemoteEntry, path: LinkPath, _ open: OpenContainer
    ) async throws(WireFailure) -> [[String: Any]]? {
        guard let history = open.container as? any ContainerHistory else { return nil }
        let versions = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await history.history(of: file.id, limit: Self.versionsShown)
        }
        return versions.filter { !$0.entry.isDeleted && $0.entry.state.kind == .file }.map { version in
            let saved = WebFormat.time(nanoseconds: version.committedAt)
            let current = version.entry.version == file.version
            var row: [String: Any] = [
                "saved": saved.text, "iso": saved.iso, "size": WebFormat.size(version.entry.state.size),
                "device": version.entry.device, "version": String(version.entry.version), "path": path.text,
            ]
            if current {
                row["current"] = true
            } else {
                row["download"] = WebPaths.raw(open.name, path.text, version: version.entry.version)
                if open.role.canWrite { row["restore"] = WebPaths.action(open.name, "restore") }
            }
            return row
        }
    }

    /// The historic version `version` of `file`, a file's; `404` when the history no longer has it.
    static func historicFile(
        _ file: RemoteEntry, version: EntryVersion, _ open: OpenContainer
    ) async throws(WireFailure) -> RemoteEntry {
        guard let history = open.container as? any ContainerHistory else {
            throw WireFailure(.notImplemented, "this container keeps no versions")
        }
        let versions = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await history.history(of: file.id, limit: HistoryPage.limits.upperBound)
        }
        guard let found = versions.first(where: { $0.entry.version == version }), !found.entry.isDeleted,
            found.entry.state.kind == .file
        else { throw WireFailure(.notFound, "that version is not kept (any more)") }
        return found.entry
    }

    /// `POST /c/NAME/restore` (`path`, `version`): the file's content and time as they were.
    func restoreVersion(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let form = try await editorForm(request, open, signed)
        let path = try Self.formPath(form["path"] ?? "")
        guard let text = form["version"], let version = EntryVersion(text) else {
            throw WireFailure(.invalidRequest, "which version?")
        }
        let file = try await open.entry(path)
        let old = try await Self.historicFile(file, version: version, open)
        var state = file.state
        state.manifest = old.state.manifest
        state.size = old.state.size
        state.mtime = old.state.mtime
        state.xattrs = old.state.xattrs
        try await commit(
            CommitRequest(
                id: file.id, baseVersion: file.version, change: .put(state), device: "web:\(signed.session.id)"),
            open)
        note("restore", signed, open)
        return WebResponse.redirect(to: WebPaths.file(open.name, path.text))
    }

    /// `GET /c/NAME/trash`: the deleted entries, newest first, `before` a version for older ones.
    func trashPage(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let query = try RequestReading.query(of: request, allowed: ["before"])
        var before: EntryVersion?
        if let text = query["before"] {
            guard let value = EntryVersion(text), HistoryAnswerValidation.beforeRange.contains(value) else {
                throw WireFailure(.invalidRequest, "'before' is a version")
            }
            before = value
        }
        guard let history = open.container as? any ContainerHistory else {
            throw WireFailure(.notImplemented, "this container keeps no trash")
        }
        let deleted = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await history.deletedEntries(before: before, limit: Self.trashPage)
        }
        var rows: [[String: Any]] = []
        for version in deleted {
            let entry = version.entry
            let when = WebFormat.time(nanoseconds: version.committedAt)
            var row: [String: Any] = [
                "name": String(decoding: entry.state.name, as: UTF8.self), "deleted": when.text, "iso": when.iso,
                "size": entry.state.kind == .file ? WebFormat.size(entry.state.size) : "folder",
                "folder": try await folderText(of: entry.state.parent, open), "id": entry.id.hex,
                "version": String(entry.version),
            ]
            if open.role.canWrite { row["restore"] = WebPaths.action(open.name, "undelete") }
            rows.append(row)
        }
        var page: [String: Any] = [
            "crumbs": Self.crumbs(open.name, LinkPath(names: []), linkLast: true), "rows": rows,
            "hasRows": !rows.isEmpty,
        ]
        if deleted.count == Self.trashPage, let last = deleted.last {
            page["older"] = WebPaths.trash(open.name, before: last.entry.version)
        }
        return WebResponse.html(templates.render("trash", PageContext(WebFrame(title: "Trash", signed: signed), page)))
    }

    /// `POST /c/NAME/undelete` (`id`, `version`): the deleted entry back in its folder, under its
    /// name or, if that is taken now, the first free `UploadName` candidate.
    func undelete(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let form = try await editorForm(request, open, signed)
        guard let id = form["id"].flatMap(FileID.init(hex:)), let version = form["version"].flatMap(EntryVersion.init)
        else { throw WireFailure(.invalidRequest, "which entry?") }
        let container = open.container
        let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.entry(id)
        }
        guard let entry = found, entry.isDeleted, entry.version == version else {
            throw WireFailure(.invalidRequest, "it is not in the trash (now): reload the trash")
        }
        for attempt in 1...UploadName.numbered {
            var state = entry.state
            state.name = UploadName.candidate(entry.state.name, attempt)
            let outcome = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await container.commit(
                    CommitRequest(id: id, baseVersion: version, change: .put(state), device: "web:\(signed.session.id)")
                )
            }
            if case .nameTaken = outcome { continue }
            if case .parentMissing = outcome {
                throw WireFailure(.invalidRequest, "its folder is deleted too: restore the folder first")
            }
            try Self.accept(outcome)
            note("undelete", signed, open)
            return WebResponse.redirect(to: WebPaths.trash(open.name, before: nil))
        }
        throw WireFailure(.invalidRequest, "no free name was found to restore it under")
    }

    /// A change form's fields, its CSRF token checked and the user an editor.
    func editorForm(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> WebForm {
        let form = try await WebSessions.changeForm(request, signed: signed)
        guard open.role.canWrite else {
            throw WireFailure(.forbidden, "you are \(open.role.withArticle) in '\(open.name)': you cannot change it")
        }
        return form
    }

    /// Where a deleted entry was: its folder's path if that folder is live, else a note.
    private func folderText(of parent: FileID?, _ open: OpenContainer) async throws(WireFailure) -> String {
        guard let parent, parent != .root else { return "(the top)" }
        let container = open.container
        var names: [[UInt8]] = []
        var next: FileID? = parent
        while let id = next, id != .root, names.count < LinkPath.maximumDepth {
            let found = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await container.entry(id)
            }
            guard let entry = found, !entry.isDeleted else { return "(a deleted folder)" }
            names.insert(entry.state.name, at: 0)
            next = entry.state.parent
        }
        return LinkPath(names: names).text
    }
}
