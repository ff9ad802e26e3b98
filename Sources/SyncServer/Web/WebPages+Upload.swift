import Foundation
import HTTPTypes
import Hummingbird
import SyncBackend

/// Uploads from the page, through the chunk protocol: the page's script cuts a file into
/// `WebUpload.pieceBytes` pieces, hashes each (SHA-256, WebCrypto), asks which the container
/// lacks, sends those, then commits the file. A dropped connection costs at most the piece in
/// flight: the script asks again and sends only what is still missing, also after a reload.
///
/// - `POST /c/NAME/missing` `{"hashes":[HEX…]}` → `{"missing":[HEX…]}` (at most
///   `WebUpload.maximumHashes`);
/// - `PUT /c/NAME/chunk?hash=HEX` with the piece's plain bytes (at most `pieceBytes`): checked
///   against its hash, compressed as a mount's chunks are, admitted under the quota and stored;
/// - `POST /c/NAME/commit` `{"folder":PATH,"name":NAME,"chunks":[{"hash":HEX,"length":N}…]}`:
///   the file at FOLDER/NAME, a new version of the file there if there is one (the old one stays
///   in its history), `409`-like refusal if a folder has the name.
///
/// Each needs an editor's role, the `X-SyncFS-CSRF` header with the session's token, and a
/// same-origin request; bodies count against the session's, the container's and the server's
/// budgets as a token's do.
extension WebPages {
    static let csrfHeader = HTTPField.Name("X-SyncFS-CSRF")!

    func upload(
        _ action: String, _ request: Request, _ open: OpenContainer, _ signed: WebSessions.Signed
    ) async throws(WireFailure) -> Response {
        let token = try RequestReading.singleHeader(Self.csrfHeader, of: request)
        try WebSessions.checkChange(request, token: token, signed: signed)
        guard open.role.canWrite else {
            throw WireFailure(.forbidden, "you are \(open.role.withArticle) in '\(open.name)': you cannot upload")
        }
        let budget = "web:\(signed.session.id)"
        switch action {
        case "missing":
            let grant = try bodies.reserve(64 << 10, container: open.name, token: budget, upload: false)
            defer { bodies.release(grant) }
            let asked = try await Self.json(WebUpload.MissingRequest.self, from: request, limit: 64 << 10)
            guard asked.hashes.count <= WebUpload.maximumHashes else {
                throw WireFailure(.tooLarge, "ask about at most \(WebUpload.maximumHashes) pieces at once")
            }
            var hashes: [ChunkHash] = []
            for text in asked.hashes {
                guard let hash = ChunkHash(hex: text) else {
                    throw WireFailure(.invalidRequest, "'\(text)' is not a hash")
                }
                hashes.append(hash)
            }
            let container = open.container
            let missing = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await container.missingChunks(hashes)
            }
            return JSONResponse.make(WebUpload.MissingAnswer(missing: missing.map(\.hex)), status: 200)
        case "chunk":
            let query = try RequestReading.query(of: request, allowed: ["hash"])
            guard let hash = query["hash"].flatMap(ChunkHash.init(hex:)) else {
                throw WireFailure(.invalidRequest, "which piece? (hash=HEX)")
            }
            let grant = try bodies.reserve(WebUpload.pieceBytes, container: open.name, token: budget, upload: true)
            defer { bodies.release(grant) }
            let plain = try await RequestReading.body(of: request, limit: WebUpload.pieceBytes, as: [UInt8].self)
            try await store(plain, as: hash, open)
            return Response(status: .noContent, headers: WebResponse.pageHeaders)
        case "commit":
            let grant = try bodies.reserve(2 << 20, container: open.name, token: budget, upload: false)
            defer { bodies.release(grant) }
            let asked = try await Self.json(WebUpload.CommitRequest.self, from: request, limit: 2 << 20)
            let path = try await commitUpload(asked, open, device: "web:\(signed.session.id)")
            audit?.note(
                AuditRecord(
                    time: AccessControl.unixNow(), container: open.name,
                    actor: "user:\(signed.session.user)/web:\(signed.session.id)", address: signed.session.address,
                    action: AuditAction.commit.rawValue, target: "web upload",
                    result: "ok, \(asked.chunks.reduce(0) { $0 + $1.length }) bytes"))
            return JSONResponse.make(WebUpload.CommitAnswer(path: path), status: 200)
        default:
            throw WireFailure(.notFound, "there is no upload call '\(action)'")
        }
    }

    /// The body, at most `limit` bytes (what was reserved for it), decoded as JSON.
    private static func json<T: Decodable & Sendable>(
        _ type: T.Type, from request: Request, limit: Int
    ) async throws(WireFailure) -> T {
        let body = try await RequestReading.body(of: request, limit: limit, as: Data.self)
        return try await RequestReading.decode(type, from: body)
    }

    /// Checks `plain` against `hash`, compresses it as a mount would, and stores it under the quota.
    private func store(_ plain: [UInt8], as hash: ChunkHash, _ open: OpenContainer) async throws(WireFailure) {
        let chunk = await Offload.run { plain.withUnsafeBytes { ChunkCodec.encode($0) } }
        guard chunk.hash == hash else {
            throw WireFailure(.chunkMismatch, "the piece's bytes do not hash to \(hash.hex)")
        }
        if let bandwidth { try await SyncResponder.paceUpload(bandwidth, chunk.payload.count, container: open.name) }
        try await quotas?.admit(chunk, name: open.name, container: open.container)
        let container = open.container
        try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.putChunk(chunk)
        }
        quotas?.stored(chunk, name: open.name)
    }

    /// Commits the uploaded file: new, or a new version of the file of that name.
    private func commitUpload(
        _ asked: WebUpload.CommitRequest, _ open: OpenContainer, device: String
    ) async throws(WireFailure) -> String {
        let folderPath = try Self.formPath(asked.folder)
        let name = try Self.newName(asked.name)
        guard asked.chunks.count <= WebUpload.maximumPieces else {
            throw WireFailure(.tooLarge, "a file from the page has at most \(WebUpload.maximumPieces) pieces")
        }
        var manifest: [ChunkRef] = []
        for piece in asked.chunks {
            guard let hash = ChunkHash(hex: piece.hash), (1...Int64(WebUpload.pieceBytes)).contains(piece.length) else {
                throw WireFailure(.invalidRequest, "a piece is a hash and 1-\(WebUpload.pieceBytes) bytes")
            }
            manifest.append(ChunkRef(hash: hash, length: piece.length))
        }
        let size = manifest.reduce(Int64(0)) { $0 + $1.length }
        let folder = try await open.entry(folderPath)
        guard folder.state.kind == .directory else { throw WireFailure(.notFound, "the folder is not a folder") }
        let tree = open.walk.tree
        let existing = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await tree.child(named: name, of: folder.id)
        }
        var mtime = WallClock.nanoseconds()
        if let modified = asked.modified {
            // Milliseconds from 1970 to 2200: anything else is not a browser's file time.
            guard (0...7_258_118_400_000).contains(modified) else {
                throw WireFailure(.invalidRequest, "'modified' is milliseconds since 1970")
            }
            mtime = modified * 1_000_000
        }
        let request: CommitRequest
        if let existing {
            guard existing.state.kind == .file else {
                throw WireFailure(.invalidRequest, "a folder or link named '\(asked.name)' is there already")
            }
            var state = existing.state
            state.manifest = manifest
            state.size = size
            state.mtime = mtime
            request = CommitRequest(id: existing.id, baseVersion: existing.version, change: .put(state), device: device)
        } else {
            let state = EntryState(
                parent: folder.id, name: name, kind: .file, mode: 0o644, mtime: mtime, size: size, manifest: manifest)
            request = CommitRequest(id: FileID.random(), baseVersion: 0, change: .put(state), device: device)
        }
        try await commit(request, open)
        return Self.child(folderPath, name)
    }
}

/// The upload calls' bodies and limits.
enum WebUpload {
    /// The page cuts files into pieces of this size (a mount's largest chunk).
    static let pieceBytes = ContentDefinedChunker.standard.maxSize
    static let maximumHashes = 1_000
    /// 16,384 pieces of 4 MiB: 64 GiB.
    static let maximumPieces = 16_384

    struct MissingRequest: Decodable, Sendable { let hashes: [String] }
    struct MissingAnswer: Encodable, Sendable { let missing: [String] }
    struct Piece: Decodable, Sendable {
        let hash: String
        let length: Int64
    }
    struct CommitRequest: Decodable, Sendable {
        let folder: String
        let name: String
        let chunks: [Piece]
        /// The file's modification time in the browser, milliseconds since the epoch.
        let modified: Int64?
    }
    struct CommitAnswer: Encodable, Sendable { let path: String }
}
