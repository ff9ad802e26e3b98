import HTTPTypes
import Hummingbird
import NIOCore
import SyncBackend

/// `GET /c/NAME/zip?path=P`: a folder and everything below it as one zip, streamed as it is read
/// (`ZipStream`: files stored, not compressed; content is often compressed already, and the
/// server's CPU stays free).
///
/// What goes in: every live file and folder below, by name bytes, with paths relative to the
/// folder; symbolic links are left out (a zip's links are a hazard for whoever unpacks it);
/// a `\` in a name becomes `_` (unzip tools on Windows read it as a separator). The tree is read
/// first (at most `maximumEntries`, else `413` before anything is sent); the content is then read
/// chunk by chunk, so memory does not grow with the files' sizes.
extension WebPages {
    static let maximumZipEntries = 100_000
    /// The most bytes of names a zip's entries may add up to (its central directory's size, about).
    static let maximumZipPathBytes = 32 << 20

    func zipDownload(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed, address: String?
    ) async throws(WireFailure) -> Response {
        let (path, _) = try Self.path(of: request, allowed: [])
        let folder = try await open.entry(path)
        guard folder.state.kind == .directory else { throw WireFailure(.notFound, "the path is not a folder") }
        let ticket = try heavy(signed)
        let items = try await Self.zipItems(below: folder, in: open)
        try bandwidth?.mayFetch(container: open.name)
        let container = open.container
        let name = open.name
        let bandwidth = bandwidth
        let body = ResponseBody { writer in
            // The place is given back when this writer ends (or is dropped unrun).
            defer { withExtendedLifetime(ticket) {} }
            var zip = ZipStream()
            for item in items {
                let seconds = item.entry.state.mtime / 1_000_000_000
                if item.entry.state.kind == .directory {
                    try await writer.write(
                        ByteBuffer(bytes: zip.folder(item.path + [UInt8(ascii: "/")], modified: seconds)))
                    continue
                }
                try await writer.write(
                    ByteBuffer(bytes: zip.beginFile(item.path, size: UInt64(item.entry.state.size), modified: seconds)))
                for reference in item.entry.state.manifest {
                    if let bandwidth {
                        try await SyncResponder.pace(bandwidth, Int(reference.length), .download, container: name)
                    }
                    let plain = try await FileStream.plainChunk(reference, first: nil, in: container)
                    zip.content(plain)
                    try await writer.write(ByteBuffer(bytes: plain))
                }
                try await writer.write(ByteBuffer(bytes: zip.endFile()))
            }
            try await writer.write(ByteBuffer(bytes: zip.end()))
            try await writer.finish(nil)
        }
        let archive = (path.names.last ?? Array(open.name.utf8)) + Array(".zip".utf8)
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/zip", .contentDisposition: ContentDisposition.attachment(archive),
                HTTPField.Name("X-Content-Type-Options")!: "nosniff", .cacheControl: "private, no-store",
            ], body: body)
    }

    /// Every live file and folder below `folder` (and symbolic link, if `keepLinks`), depth first
    /// by name bytes, parents before their children, with its path relative to `folder`; `413`
    /// past `maximumZipEntries`.
    static func zipItems(
        below folder: RemoteEntry, in open: OpenContainer, keepLinks: Bool = false
    ) async throws(WireFailure) -> [(path: [UInt8], entry: RemoteEntry)] {
        var items: [(path: [UInt8], entry: RemoteEntry)] = []
        var pathBytes = 0
        var pending: [(path: [UInt8], id: FileID)] = [([], folder.id)]
        while let next = pending.popLast() {
            let children = try await children(of: next.id, in: open)
            guard !children.truncated else { throw tooMany }
            var folders: [(path: [UInt8], id: FileID)] = []
            for child in children.entries where keepLinks || child.state.kind != .symlink {
                let name = child.state.name.map { Self.zipSafe($0) ? $0 : UInt8(ascii: "_") }
                let path = next.path.isEmpty ? name : next.path + [UInt8(ascii: "/")] + name
                guard path.count < ZipStream.maximumNameBytes else {
                    throw WireFailure(.tooLarge, "a path below the folder is too long for a zip")
                }
                items.append((path, child))
                pathBytes += path.count
                guard items.count <= maximumZipEntries, pathBytes <= maximumZipPathBytes else { throw tooMany }
                if child.state.kind == .directory { folders.append((path, child.id)) }
            }
            // Depth first, by name: the stack takes the last name first.
            pending += folders.reversed()
        }
        return items
    }

    /// Bytes a zip name keeps: not `\\` or `:` (separators and drive letters to unzip tools on
    /// Windows) nor a C0 control or DEL.
    static func zipSafe(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte != 0x7F && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: ":")
    }

    private static var tooMany: WireFailure {
        WireFailure(
            .tooLarge,
            "the folder holds more than \(maximumZipEntries) entries (or \(maximumZipPathBytes >> 20) MiB of names): "
                + "download a folder below it, or sync it")
    }
}
