import Hummingbird
import SyncBackend

/// `POST .../chunks/missing`, `PUT .../chunks/HASH`, `GET .../chunks/HASH`.
extension SyncResponder {
    func missingChunks(_ call: Call) async throws(WireFailure) -> Response {
        try await decodingJSON(MissingChunksRequest.self, of: call) { request throws(WireFailure) in
            try await missingChunks(request, call)
        }
    }

    private func missingChunks(_ request: MissingChunksRequest, _ call: Call) async throws(WireFailure) -> Response {
        guard request.hashes.count <= WireProtocol.maxMissingCheckHashes else {
            throw WireFailure(
                .tooLarge,
                "\(request.hashes.count) hashes; at most \(WireProtocol.maxMissingCheckHashes) per request")
        }
        let missing = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.missingChunks(request.hashes)
        }
        return JSONResponse.make(MissingChunksResponse(missing: missing), status: 200)
    }

    /// Stores the chunk only after its payload was checked against its hash (`ChunkUpload`).
    ///
    /// Each upload holds its payload and its decoded bytes (up to 16 MiB each) while it is read,
    /// verified and stored, so it holds an upload slot of its token, container and the server
    /// (`BodyBudget`, taken by `SyncResponder` before this runs: beyond them `429`/`503` with
    /// `Retry-After: 1`, before the body is read; the client retries). A chunk that would take
    /// the container over its quota is refused `507 quotaExceeded` (`QuotaBook`). Under a bandwidth
    /// limit (`ServerBandwidth`) its declared length is charged before the body is read, or it is
    /// refused `429`/`503` with `Retry-After`.
    func putChunk(_ call: Call) async throws(WireFailure) -> Response {
        let hash = try Self.hash(call)
        let (encoding, plainLength) = try ChunkUpload.headers(of: call.request)
        if let bandwidth {
            let declared = try RequestReading.singleHeader(.contentLength, of: call.request).flatMap {
                RequestReading.decimal($0)
            }
            try bandwidth.admitUpload(
                declaredLength: declared, largest: WireProtocol.maxChunkBodyBytes, container: call.name)
        }
        // Read straight into the payload's array (no whole-body buffer besides it), with room for
        // the declared length at once: the slot bounds what uploads reserve together.
        let payload = try await RequestReading.body(
            of: call.request, limit: WireProtocol.maxChunkBodyBytes, reserve: WireProtocol.maxChunkBodyBytes,
            as: [UInt8].self)
        let chunk = EncodedChunk(hash: hash, encoding: encoding, plainLength: plainLength, payload: payload)
        try await ChunkUpload.verify(chunk)
        try await admitUnderQuota(call) { () async throws(WireFailure) in
            try await quotas?.admit(chunk, name: call.name, container: call.container)
        }
        try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.putChunk(chunk)
        }
        quotas?.stored(chunk, name: call.name)
        ServerMetrics.chunkBytesIn.increment(by: chunk.payload.count)
        return JSONResponse.empty(status: 204)
    }

    /// The payload as stored, with its encoding and plain length in headers. Under a bandwidth
    /// limit it is not fetched while a bucket is in debt, and its size is charged before it is sent.
    func getChunk(_ call: Call) async throws(WireFailure) -> Response {
        let hash = try Self.hash(call)
        try bandwidth?.mayFetch(container: call.name)
        let chunk = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.chunk(hash)
        }
        try bandwidth?.admit(chunk.payload.count, .download, container: call.name)
        ServerMetrics.chunkBytesOut.increment(by: chunk.payload.count)
        return JSONResponse.bytes(
            chunk.payload, status: 200, contentType: "application/octet-stream",
            headers: [
                ChunkUpload.encodingHeader: WireProtocol.encodingName(chunk.encoding),
                ChunkUpload.plainLengthHeader: String(chunk.plainLength),
            ])
    }

    /// `HASH`: exactly 64 lowercase hex digits.
    private static func hash(_ call: Call) throws(WireFailure) -> ChunkHash {
        let text = call.captures["HASH"] ?? ""
        let isLowercaseHex = text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        guard isLowercaseHex, let hash = ChunkHash(hex: text) else {
            throw WireFailure(.invalidRequest, "'\(text)' is not a chunk hash (64 lowercase hex digits)")
        }
        return hash
    }
}
