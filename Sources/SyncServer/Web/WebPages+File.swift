import HTTPTypes
import Hummingbird
import SyncBackend

/// A file: its facts, a download, and a preview of text, images and PDF.
///
/// A user's file is never served as a page of this origin: inline only for the image types and
/// PDF (`WebPreview`), with its own type, `nosniff` and a sandboxing CSP; anything else is an
/// attachment of type `application/octet-stream`. Text is previewed inside the page, escaped.
extension WebPages {
    func filePage(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let (path, _) = try Self.path(of: request, allowed: [])
        guard !path.names.isEmpty else { return WebResponse.redirect(to: WebPaths.folder(open.name, "")) }
        let file = try await open.entry(path)
        if file.state.kind == .directory { return WebResponse.redirect(to: WebPaths.folder(open.name, path.text)) }
        let name = String(decoding: path.names[path.names.count - 1], as: UTF8.self)
        let modified = WebFormat.time(nanoseconds: file.state.mtime)
        var page: [String: Any] = [
            "crumbs": Self.crumbs(open.name, path, linkLast: false), "heading": name,
            "size": WebFormat.size(file.state.size), "bytes": String(file.state.size), "modified": modified.text,
            "iso": modified.iso, "download": WebPaths.raw(open.name, path.text),
        ]
        if open.role.canWrite { page["changes"] = Self.changeForms(open.name, path) }
        if file.state.kind == .symlink {
            page["download"] = nil
            page["text"] = "A symbolic link to " + String(decoding: file.state.symlinkTarget ?? [], as: UTF8.self)
            return WebResponse.html(templates.render("file", PageContext(WebFrame(title: name, signed: signed), page)))
        }
        switch WebPreview.kind(of: path.names[path.names.count - 1]) {
        case .image: page["image"] = WebPaths.raw(open.name, path.text, inline: true)
        case .pdf: page["pdf"] = WebPaths.raw(open.name, path.text, inline: true)
        case nil:
            if let text = try await Self.textPreview(of: file, in: open.container) {
                page["text"] = text.text
                if text.cut { page["cut"] = true }
            } else {
                page["noPreview"] = true
            }
        }
        if let versions = try await versionRows(of: file, path: path, open), versions.count > 1 {
            page["versions"] = versions
            page["hasVersions"] = true
        }
        return WebResponse.html(templates.render("file", PageContext(WebFrame(title: name, signed: signed), page)))
    }

    /// The beginning of `file` (`WebPreview.textBytes`) if it reads as text: UTF-8 without NUL
    /// or other controls than tab, newline and carriage return.
    static func textPreview(
        of file: RemoteEntry, in container: any Container
    ) async throws(WireFailure) -> (text: String, cut: Bool)? {
        var bytes: [UInt8] = []
        var read: [ChunkHash: [UInt8]] = [:]
        do {
            // At most `previewChunks` chunks are read, each once however often the manifest names it.
            for reference in file.state.manifest.prefix(WebPreview.previewChunks)
            where bytes.count < WebPreview.textBytes {
                if read[reference.hash] == nil {
                    read[reference.hash] = try await FileStream.plainChunk(reference, first: nil, in: container)
                }
                bytes += read[reference.hash] ?? []
            }
        } catch let error as ContainerProtocolError {
            throw WireFailure(error)
        } catch {
            throw WireFailure(.storageFailure, "the file cannot be read: \(error)")
        }
        let cut = bytes.count > WebPreview.textBytes || Int64(bytes.count) < file.state.size
        if bytes.count > WebPreview.textBytes { bytes.removeSubrange(WebPreview.textBytes...) }
        // A cut may split a character: drop up to three bytes of an incomplete one.
        for drop in 0...3 where drop <= bytes.count {
            guard let text = String(validating: bytes.dropLast(drop), as: UTF8.self) else { continue }
            let isText = text.unicodeScalars.allSatisfy { $0.value >= 0x20 || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            return isText ? (text, cut || drop > 0) : nil
        }
        return nil
    }

    /// `GET /c/NAME/raw?path=P`: the file's content, an attachment; with `inline=1`, an image or a
    /// PDF shown in the page.
    func rawContent(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed, address: String?
    ) async throws(WireFailure) -> Response {
        let (path, query) = try Self.path(of: request, allowed: ["inline", "version"])
        guard let name = path.names.last else { throw WireFailure(.notFound, "the path is not a file") }
        var file = try await open.entry(path)
        if let text = query["version"] {
            guard let version = EntryVersion(text) else { throw WireFailure(.invalidRequest, "which version?") }
            file = try await Self.historicFile(file, version: version, open)
        }
        guard file.state.kind == .file else { throw WireFailure(.notFound, "the path is not a file") }
        let first = try await SyncResponder.firstChunk(of: file, in: open.container)
        try bandwidth?.mayFetch(container: open.name)
        let body = FileStream.body(
            of: file, first: first, in: open.container, named: open.name, bandwidth: bandwidth,
            holding: try heavy(signed))
        var headers: HTTPFields = [
            HTTPField.Name("X-Content-Type-Options")!: "nosniff", .cacheControl: "private, no-store",
            .contentSecurityPolicy: WebResponse.fileContentSecurityPolicy,
        ]
        if query["inline"] == "1", let kind = WebPreview.kind(of: name) {
            headers[.contentType] = kind.contentType(of: name)
            headers[.contentDisposition] = "inline"
        } else {
            headers[.contentType] = "application/octet-stream"
            headers[.contentDisposition] = ContentDisposition.attachment(name)
        }
        return Response(status: .ok, headers: headers, body: body)
    }
}

/// Which files the page shows inline, by their name's extension (never by their content: a
/// file's bytes do not choose how this origin treats them).
enum WebPreview {
    case image
    case pdf

    /// How much of a text file the page shows.
    static let textBytes = 256 << 10
    /// The most chunk references a text preview goes through.
    static let previewChunks = 64

    static let imageTypes = [
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "avif": "image/avif", "bmp": "image/bmp",
    ]

    static func kind(of name: [UInt8]) -> WebPreview? {
        let suffix = suffix(of: name)
        if imageTypes[suffix] != nil { return .image }
        return suffix == "pdf" ? .pdf : nil
    }

    func contentType(of name: [UInt8]) -> String {
        switch self {
        case .image: return Self.imageTypes[Self.suffix(of: name)] ?? "application/octet-stream"
        case .pdf: return "application/pdf"
        }
    }

    private static func suffix(of name: [UInt8]) -> String {
        guard let dot = name.lastIndex(of: UInt8(ascii: ".")) else { return "" }
        return String(decoding: name[(dot + 1)...], as: UTF8.self).lowercased()
    }
}
