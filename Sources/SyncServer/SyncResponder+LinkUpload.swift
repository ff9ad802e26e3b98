import Foundation
import HTTPTypes
import Hummingbird
import SyncBackend

/// `POST /v1/links/SECRET/upload?name=N`: a file dropped through an `upload-only` link.
///
/// The body is read as it arrives and cut into chunks as a mount cuts them
/// (`ContentDefinedChunker.standard`, zlib as `ChunkCodec`), each checked against the quota and
/// stored before the next is read, so an upload holds at most a few chunks' bytes (one upload
/// slot of the link's own share of the container's budget). At most
/// `WireProtocol.maxLinkUploadBytes`, within the server's request deadline. Then one commit adds
/// the file to the link's folder as device `link:ID`, under the name asked for or, if that is
/// taken, the first free `UploadName` candidate; nothing existing is replaced, and the answer does
/// not say which name it got (`LinkUploadAnswer`).
extension SyncResponder {
    func linkUpload(
        _ place: LinkPlace, _ query: [String: String], _ request: Request, address: String?
    ) async throws(WireFailure) -> Response {
        let link = place.link
        guard link.kind == .uploadOnly else {
            throw WireFailure(.forbidden, "only an upload-only link takes uploads")
        }
        let name: [UInt8]
        switch LinkPath.name(query[WireProtocol.Query.name] ?? "") {
        case .success(let value): name = value
        case .failure(let why): throw WireFailure(.invalidRequest, "the upload's name: \(why)")
        }
        if let problem = UploadName.problem(name) {
            throw WireFailure(.invalidRequest, "the upload's name: \(problem)")
        }
        let folder = try await place.entry([], "the link's folder")
        guard folder.state.kind == .directory else { throw WireFailure(.notFound, "the link's folder is not a folder") }
        let ticket = try enterTransfer(link, address: address)
        defer { withExtendedLifetime(ticket) {} }
        let limit = WireProtocol.maxLinkUploadBytes
        _ = try RequestReading.declaredLength(of: request, limit: limit)
        let grant = try reserve(
            2 * ContentDefinedChunker.standard.maxSize, container: link.container, token: "link:\(link.id)",
            upload: true)
        defer { bodies.release(grant) }
        let (manifest, size) = try await storeChunks(of: request, limit: limit, place, address: address)
        let entry = try await commitUpload(name, manifest: manifest, size: size, in: folder, place)
        audit?.note(
            AuditRecord(
                time: AccessControl.unixNow(), container: link.container, actor: "link:\(link.id)", address: address,
                action: AuditAction.linkUse.rawValue, target: "entry:\(entry.id)", result: "upload, \(size) bytes"))
        return JSONResponse.make(LinkUploadAnswer(size: size), status: 201)
    }

    /// Reads, cuts and stores the body's chunks; the manifest and the byte count.
    private func storeChunks(
        of request: Request, limit: Int, _ place: LinkPlace, address: String?
    ) async throws(WireFailure) -> ([ChunkRef], Int64) {
        let chunker = ContentDefinedChunker.standard
        var pending: [UInt8] = []
        var manifest: [ChunkRef] = []
        var size = 0
        do {
            for try await part in request.body {
                guard part.readableBytes <= limit - size else {
                    throw WireFailure(.tooLarge, "an upload through a link has at most \(limit) bytes")
                }
                size += part.readableBytes
                pending.append(contentsOf: part.readableBytesView)
                while pending.count >= chunker.maxSize {
                    manifest.append(try await storeNextChunk(&pending, chunker, place, address: address))
                }
            }
        } catch let failure as WireFailure {
            throw failure
        } catch {
            throw WireFailure(.invalidRequest, "cannot read the request body: \(error)")
        }
        while !pending.isEmpty {
            manifest.append(try await storeNextChunk(&pending, chunker, place, address: address))
        }
        return (manifest, Int64(size))
    }

    /// Cuts the first chunk off `pending`, encodes it off the cooperative pool, admits it under
    /// the quota and stores it.
    private func storeNextChunk(
        _ pending: inout [UInt8], _ chunker: ContentDefinedChunker, _ place: LinkPlace, address: String?
    ) async throws(WireFailure) -> ChunkRef {
        let cut = pending.withUnsafeBytes { chunker.cutPoint(in: $0) }
        let plain = Array(pending[..<cut])
        pending.removeFirst(cut)
        let chunk = await Offload.run { plain.withUnsafeBytes { ChunkCodec.encode($0) } }
        let link = place.link
        let container = place.container
        if let bandwidth { try await Self.paceUpload(bandwidth, chunk.payload.count, container: link.container) }
        do {
            try await quotas?.admit(chunk, name: link.container, container: container)
        } catch {
            if error.code == .quotaExceeded {
                audit?.note(
                    AuditRecord(
                        time: AccessControl.unixNow(), container: link.container, actor: "link:\(link.id)",
                        address: address, action: AuditAction.quotaRefusal.rawValue, target: "link upload",
                        result: error.message))
            }
            throw error
        }
        try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await container.putChunk(chunk)
        }
        quotas?.stored(chunk, name: link.container)
        ServerMetrics.chunkBytesIn.increment(by: chunk.payload.count)
        return ChunkRef(hash: chunk.hash, length: Int64(cut))
    }

    /// Commits the new file under `name` or its first free alternative.
    private func commitUpload(
        _ name: [UInt8], manifest: [ChunkRef], size: Int64, in folder: RemoteEntry, _ place: LinkPlace
    ) async throws(WireFailure) -> RemoteEntry {
        let container = place.container
        for attempt in 1...(UploadName.numbered + 16) {
            let state = EntryState(
                parent: folder.id, name: UploadName.candidate(name, attempt), kind: .file, mode: 0o644,
                mtime: WallClock.nanoseconds(), size: size, manifest: manifest)
            let request = CommitRequest(
                id: FileID.random(), baseVersion: 0, change: .put(state), device: "link:\(place.link.id)")
            let outcome = try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await container.commit(request)
            }
            switch outcome {
            case .committed(let entry): return entry
            case .nameTaken: continue
            case .parentMissing: throw WireFailure(.notFound, "the link's folder is not there (now)")
            case .chunksMissing: throw WireFailure(.storageFailure, "the upload's chunks went missing; retry")
            case .versionConflict, .directoryNotEmpty, .wouldCreateCycle:
                throw WireFailure(.storageFailure, "the upload could not be added; retry")
            }
        }
        throw WireFailure(.storageFailure, "no free name was found for the upload; retry")
    }
}

/// The names an upload tries in turn: the name itself, then `NAME (2).EXT` … `NAME (100).EXT`
/// (the extension is what follows the last `.` that is not the first byte), then `NAME
/// (XXXXXXXX).EXT` with random hex digits, so a drop never tells whether a name was taken.
/// Shortened to stay within 255 bytes, never inside a UTF-8 sequence.
enum UploadName {
    static let numbered = 100

    static func candidate(_ name: [UInt8], _ attempt: Int) -> [UInt8] {
        guard attempt > 1 else { return name }
        let tag = attempt <= numbered ? String(attempt) : TokenFormat.newID()
        let suffix = Array(" (\(tag))".utf8)
        let dot = name.lastIndex(of: 0x2E).flatMap { $0 > 0 ? $0 : nil } ?? name.endIndex
        let stemRoom = 255 - suffix.count - (name.endIndex - dot)
        guard stemRoom > 0 else { return whole(Array(name), room: 255 - suffix.count) + suffix }
        return whole(Array(name[..<dot]), room: stemRoom) + suffix + Array(name[dot...])
    }

    /// At most `room` bytes of `bytes`, cut before a UTF-8 continuation byte, never inside.
    private static func whole(_ bytes: [UInt8], room: Int) -> [UInt8] {
        guard bytes.count > room else { return bytes }
        var end = room
        while end > 0, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(bytes[..<end])
    }

    /// Why a name dropped through a link is refused, or nil: control characters (C0, DEL, C1),
    /// bidirectional overrides and isolates, and U+FFFD (what bytes that were not UTF-8 became)
    /// would reach every member's disk and terminal from someone without an account.
    static func problem(_ name: [UInt8]) -> String? {
        let text = String(decoding: name, as: UTF8.self)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0...0x1F, 0x7F...0x9F: return "a name has no control characters"
            case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C:
                return "a name has no bidirectional controls"
            case 0xFFFD: return "a name is UTF-8 text"
            default: continue
            }
        }
        return nil
    }
}
