import Foundation
import Hummingbird
import SyncBackend

/// `GET .../NAME`, `GET .../entries/ID`, `POST .../commits`.
extension SyncResponder {
    func containerInfo(_ call: Call) -> Response {
        JSONResponse.make(
            ContainerInfo(
                id: call.container.containerID, name: call.name,
                features: servesBatches ? WireProtocol.Feature.all : nil, access: call.role),
            status: 200)
    }

    func entry(_ call: Call) async throws(WireFailure) -> Response {
        let text = call.captures["ID"] ?? ""
        guard let id = FileID(hex: text) else {
            throw WireFailure(.invalidRequest, "'\(text)' is not an entry ID (32 lowercase hex digits)")
        }
        let entry = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.entry(id)
        }
        guard let entry else { throw WireFailure(.entryNotFound, "no entry \(id) has ever existed") }
        return await JSONResponse.make(entry, status: 200, estimatedBytes: ChangePage.estimatedBytes(of: entry))
    }

    /// `200` with the outcome when committed, `409` with it otherwise (nothing changed).
    func commit(_ call: Call) async throws(WireFailure) -> Response {
        try await decodingJSON(CommitRequest.self, of: call) { request throws(WireFailure) in
            try await commit(request, call)
        }
    }

    private func commit(_ request: CommitRequest, _ call: Call) async throws(WireFailure) -> Response {
        try CommitLimits.check(request)
        let outcome = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.commit(request)
        }
        let status: Int
        if case .committed = outcome { status = 200 } else { status = 409 }
        noteCommits(call, changes: 1, committed: status == 200 ? 1 : 0)
        return await JSONResponse.make(outcome, status: status, estimatedBytes: Self.estimatedBytes(of: outcome))
    }

    /// Reads the JSON body of `call`, then decodes it and runs `handle` holding its estimated
    /// memory (`ServerLimits.decodingFactor` times its length) from the server's decoding budget:
    /// `503` with `Retry-After` when that is not free now. The body itself is already budgeted
    /// (`BodyBudget`); only the CPU-bound part holds this one, so a slow client never does.
    func decodingJSON<T: Decodable & Sendable>(
        _ type: T.Type, of call: Call, _ handle: (T) async throws(WireFailure) -> Response
    ) async throws(WireFailure) -> Response {
        // Room for the whole declared length at once (it is budgeted): no copies while it grows.
        let body = try await RequestReading.body(
            of: call.request, limit: WireProtocol.maxJSONBodyBytes, reserve: WireProtocol.maxJSONBodyBytes,
            as: Data.self)
        let cost = body.count * bodies.limits.decodingFactor + (64 << 10)
        let answer = try await decoding.holding(cost) { () async throws(WireFailure) -> Response in
            try await handle(try await RequestReading.decode(T.self, from: body))
        }
        guard let answer else {
            throw WireFailure(
                .unavailable,
                "the server is decoding as many large requests as its memory budget allows; retry in a moment",
                headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
        }
        return answer
    }

    /// An upper bound of the outcome's JSON size (it may carry an entry with its manifest).
    static func estimatedBytes(of outcome: CommitOutcome) -> Int {
        switch outcome {
        case .committed(let entry), .nameTaken(by: let entry): return 64 + ChangePage.estimatedBytes(of: entry)
        case .versionConflict(let current): return 64 + (current.map(ChangePage.estimatedBytes) ?? 0)
        case .chunksMissing(let hashes): return 64 + 70 * hashes.count
        case .parentMissing, .directoryNotEmpty, .wouldCreateCycle: return 64
        }
    }
}
