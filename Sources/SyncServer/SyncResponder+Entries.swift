import Hummingbird
import SyncBackend

/// `GET .../NAME`, `GET .../entries/ID`, `POST .../commits`.
extension SyncResponder {
    func containerInfo(_ call: Call) -> Response {
        JSONResponse.make(ContainerInfo(id: call.container.containerID, name: call.name), status: 200)
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
        let request = try await RequestReading.json(CommitRequest.self, from: call.request)
        try CommitLimits.check(request)
        let outcome = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.commit(request)
        }
        let status: Int
        if case .committed = outcome { status = 200 } else { status = 409 }
        return await JSONResponse.make(outcome, status: status, estimatedBytes: Self.estimatedBytes(of: outcome))
    }

    /// An upper bound of the outcome's JSON size (it may carry an entry with its manifest).
    private static func estimatedBytes(of outcome: CommitOutcome) -> Int {
        switch outcome {
        case .committed(let entry), .nameTaken(by: let entry): return 64 + ChangePage.estimatedBytes(of: entry)
        case .versionConflict(let current): return 64 + (current.map(ChangePage.estimatedBytes) ?? 0)
        case .chunksMissing(let hashes): return 64 + 70 * hashes.count
        case .parentMissing, .directoryNotEmpty, .wouldCreateCycle: return 64
        }
    }
}
