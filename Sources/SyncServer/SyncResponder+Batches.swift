import Hummingbird
import NIOCore
import SyncBackend

/// `POST .../commits/batch`, `POST .../commits/all-or-nothing` and `POST .../chunks/batch`
/// (doc/PROTOCOL.md "Batches"): the container's `commit(batch:)`, `commit(allOrNothing:)` and
/// `putChunks`, every change and chunk checked as its single endpoint checks it, the whole batch
/// before anything is stored.
extension SyncResponder {
    /// `200` with one outcome per change, refusals included. Over `CommitBatch.maximumChanges`
    /// changes: `413`; a change that breaks the limits of `POST .../commits` (`CommitLimits`) or
    /// the rules every container checks first (`RequestValidation`), both checked here for every
    /// change before the container sees any, or an entry named twice, or a change the container
    /// finds malformed (a delete of an entry that is not live): `400`, nothing committed. The body is read
    /// and decoded as a single commit's is (body and decoding budgets).
    func commitBatch(_ call: Call) async throws(WireFailure) -> Response {
        try await decodingJSON(CommitBatchRequest.self, of: call) { batch throws(WireFailure) in
            try await commitBatch(batch.changes, call)
        }
    }

    private func commitBatch(_ requests: [CommitRequest], _ call: Call) async throws(WireFailure) -> Response {
        try Self.checkChanges(requests)
        let outcomes = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try CommitBatch.check(requests)
            return try await call.container.commit(batch: requests)
        }
        guard outcomes.count == requests.count else {
            throw WireFailure(
                .storageFailure, "the container answered \(outcomes.count) outcomes to \(requests.count) changes")
        }
        noteCommits(
            call, changes: requests.count,
            committed: outcomes.reduce(0) { count, outcome in
                if case .committed = outcome { return count + 1 }
                return count
            })
        let estimate = outcomes.reduce(64) { $0 + Self.estimatedBytes(of: $1) }
        return await JSONResponse.make(CommitBatchResponse(outcomes: outcomes), status: 200, estimatedBytes: estimate)
    }

    /// `200` with an `AllOrNothingOutcome`: every change committed, or none and the first
    /// refused one named. The body, its limits and checks are a batch's (`commitBatch`); so is
    /// the audit line (all its changes committed, or all refused).
    func commitAllOrNothing(_ call: Call) async throws(WireFailure) -> Response {
        try await decodingJSON(CommitBatchRequest.self, of: call) { batch throws(WireFailure) in
            try await commitAllOrNothing(batch.changes, call)
        }
    }

    private func commitAllOrNothing(_ requests: [CommitRequest], _ call: Call) async throws(WireFailure) -> Response {
        try Self.checkChanges(requests)
        let answer = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try CommitBatch.check(requests)
            return try await call.container.commit(allOrNothing: requests)
        }
        let estimate: Int
        switch answer {
        case .committed(let entries):
            guard entries.count == requests.count else {
                throw WireFailure(
                    .storageFailure, "the container committed \(entries.count) entries for \(requests.count) changes")
            }
            estimate = entries.reduce(64) { $0 + 64 + ChangePage.estimatedBytes(of: $1) }
        case .refused(let index, let outcome):
            guard requests.indices.contains(index) else {
                throw WireFailure(
                    .storageFailure, "the container refused change \(index) of \(requests.count) changes")
            }
            estimate = 64 + Self.estimatedBytes(of: outcome)
        }
        noteCommits(call, changes: requests.count, committed: answer.isCommitted ? requests.count : 0)
        return await JSONResponse.make(answer, status: 200, estimatedBytes: estimate)
    }

    /// The checks of a batch's changes before the container sees any: their count (`413`), and
    /// each change alone (`checkAlone`; `400` naming the change).
    private static func checkChanges(_ requests: [CommitRequest]) throws(WireFailure) {
        guard requests.count <= CommitBatch.maximumChanges else {
            throw WireFailure(
                .tooLarge, "a batch of \(requests.count) changes; at most \(CommitBatch.maximumChanges)")
        }
        for (index, request) in requests.enumerated() {
            do {
                try Self.checkAlone(request)
            } catch {
                throw WireFailure(error.code, "change \(index) of the batch (entry \(request.id)): \(error.message)")
            }
        }
    }

    /// The checks of one change that need no container: `CommitLimits`, `RequestValidation`.
    private static func checkAlone(_ request: CommitRequest) throws(WireFailure) {
        try CommitLimits.check(request)
        do throws(ContainerProtocolError) {
            try RequestValidation.check(request)
        } catch {
            throw WireFailure(error)
        }
    }

    /// `204` once every chunk is stored. The body (`ChunkBatchFormat`) is parsed as it arrives:
    /// over a limit (`CommitBatch`, a chunk's plain or payload length) `413`, a frame that breaks
    /// the format or a body that ends inside one `400`. Then every chunk is checked as `PUT
    /// .../chunks/HASH` checks it (`422 chunkMismatch` naming the first that fails), and the
    /// batch is held to the container's quota as a whole (`507`); only then is anything stored.
    /// It holds one upload slot (taken by `SyncResponder` before the body is read) and is charged
    /// to the bandwidth limits as one upload of its declared length.
    func chunkBatch(_ call: Call) async throws(WireFailure) -> Response {
        let limit = WireProtocol.maxChunkBatchBodyBytes
        let declared = try RequestReading.declaredLength(of: call.request, limit: limit)
        if let bandwidth {
            try bandwidth.admitUpload(declaredLength: declared, largest: limit, container: call.name)
        }
        var parser = ChunkBatchParser(declaredLength: declared)
        try await RequestReading.parts(of: call.request, limit: limit) { part throws(WireFailure) in
            var refusal: ChunkBatchFormat.Failure?
            part.withUnsafeReadableBytes { bytes in
                do throws(ChunkBatchFormat.Failure) {
                    try parser.feed(bytes)
                } catch {
                    refusal = error
                }
            }
            if let refusal { throw Self.failure(refusal) }
        }
        let chunks: [EncodedChunk]
        do {
            chunks = try parser.finish()
        } catch {
            throw Self.failure(error)
        }
        for (index, chunk) in chunks.enumerated() {
            do {
                try await ChunkUpload.verify(chunk)
            } catch {
                throw WireFailure(error.code, "chunk \(index) of the batch: \(error.message); nothing was stored")
            }
        }
        guard !chunks.isEmpty else { return JSONResponse.empty(status: 204) }
        try await admitUnderQuota(call) { () async throws(WireFailure) in
            try await quotas?.admit(chunks, name: call.name, container: call.container)
        }
        try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.putChunks(chunks)
        }
        for chunk in chunks { quotas?.stored(chunk, name: call.name) }
        ServerMetrics.chunkBytesIn.increment(by: chunks.reduce(0) { $0 + $1.payload.count })
        return JSONResponse.empty(status: 204)
    }

    private static func failure(_ error: ChunkBatchFormat.Failure) -> WireFailure {
        switch error {
        case .tooLarge(let why): return WireFailure(.tooLarge, why + "; nothing was stored")
        case .malformed(let why): return WireFailure(.invalidRequest, why + "; nothing was stored")
        }
    }
}
