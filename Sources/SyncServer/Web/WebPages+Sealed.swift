import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SyncBackend
import SyncSealed

/// A sealed (end-to-end encrypted) container on the page: the server hands the browser what it
/// stores, sealed, and the page's own script (`WebSealedScript`) opens it in the browser with
/// key material the user types there. No key, no name and no plain byte reaches the server.
///
/// - `GET /c/NAME/` the page that asks for the recovery key and shows the tree once opened;
/// - `GET /c/NAME/sealed-entries` → `{"entries":[{"id":HEX,"sealed":BASE64,"chunks":[HEX…]}…]}`:
///   every live stored entry's sealed bytes (records, ledger entries, keyrings; join requests
///   too) and the keyed IDs of the chunks its server manifest names;
/// - `GET /c/NAME/sealed-chunk?id=HEX` one stored chunk's envelope, as the server keeps it.
///
/// Every other page of a sealed container is refused (the server cannot read it). Reading needs
/// the user's membership as any page does; the answers are what a member's token may fetch
/// through the sync protocol, nothing more.
extension WebPages {
    func sealedPage(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed, page: String
    ) async throws(WireFailure) -> Response {
        switch (request.method, page) {
        case (.get, ""), (.head, ""):
            let context: [String: Any] = [
                "container": open.name, "entries": WebPaths.action(open.name, "sealed-entries"),
                "chunk": WebPaths.action(open.name, "sealed-chunk"), "sealedJS": WebAssets.sealedScriptPath,
            ]
            return WebResponse.html(
                templates.render("sealed", PageContext(WebFrame(title: open.name, signed: signed), context)))
        case (.get, "sealed-entries"):
            return try await sealedEntries(open, signed)
        case (.get, "sealed-chunk"):
            return try await sealedChunk(request, open, signed)
        default:
            throw WireFailure(
                .forbidden,
                "'\(open.name)' is encrypted by its devices: the server cannot read it; open it on its own page"
                    + " with its recovery key")
        }
    }

    /// One stored entry as the browser gets it.
    struct SealedStoredEntry: Encodable, Sendable {
        let id: String
        let sealed: String
        let chunks: [String]
    }

    struct SealedEntryList: Encodable, Sendable {
        let entries: [SealedStoredEntry]
    }

    /// The newest version of every live entry underneath, read through the container's own feed.
    private func sealedEntries(_ open: OpenContainer, _ signed: WebSessions.Signed) async throws(WireFailure)
        -> Response
    {
        let ticket = try heavy(signed)
        defer { withExtendedLifetime(ticket) {} }
        let container = open.container
        var newest: [FileID: RemoteEntry] = [:]
        var cursor = FeedCursor.beginning
        var more = true
        while more {
            let batch = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await container.changes(after: cursor, limit: 2_000)
            }
            for entry in batch.entries { newest[entry.id] = entry }
            cursor = batch.cursor
            more = batch.moreComing
        }
        var entries: [SealedStoredEntry] = []
        entries.reserveCapacity(newest.count)
        var bytes = 0
        for (id, entry) in newest {
            guard let sealed = OpaqueEntry.sealedBytes(of: entry) else { continue }
            bytes += sealed.count * 4 / 3 + 80 + entry.state.manifest.count * 67
            entries.append(
                SealedStoredEntry(
                    id: id.hex, sealed: Data(sealed).base64EncodedString(),
                    chunks: entry.state.manifest.map(\.hash.hex)))
        }
        if let bandwidth { try await SyncResponder.paceOrRefuse(bandwidth, bytes, .download, container: open.name) }
        let answer = await JSONResponse.make(SealedEntryList(entries: entries), status: 200, estimatedBytes: bytes)
        var headers = WebResponse.pageHeaders
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "private, no-store"
        return Response(status: answer.status, headers: headers, body: answer.body)
    }

    /// The envelope stored under a chunk ID; the browser checks it against the ID it computed.
    private func sealedChunk(
        _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let query = try RequestReading.query(of: request, allowed: ["id"])
        guard let id = query["id"].flatMap(ChunkHash.init(hex:)) else {
            throw WireFailure(.invalidRequest, "which chunk? (id=HEX)")
        }
        let ticket = try heavy(signed)
        defer { withExtendedLifetime(ticket) {} }
        try bandwidth?.mayFetch(container: open.name)
        let container = open.container
        let stored = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.chunk(id)
        }
        guard stored.encoding == .sealed else {
            throw WireFailure(.notFound, "there is no sealed chunk \(id.hex) in '\(open.name)'")
        }
        if let bandwidth {
            try await SyncResponder.paceOrRefuse(bandwidth, stored.payload.count, .download, container: open.name)
        }
        var headers = WebResponse.pageHeaders
        headers[.contentType] = "application/octet-stream"
        headers[.cacheControl] = "private, no-store"
        return Response(
            status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: stored.payload)))
    }
}
