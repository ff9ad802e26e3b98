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
        return JSONResponse.make(entry, status: 200)
    }

    /// `200` with the outcome when committed, `409` with it otherwise (nothing changed).
    func commit(_ call: Call) async throws(WireFailure) -> Response {
        let request = try await RequestReading.json(CommitRequest.self, from: call.request)
        try CommitLimits.check(request)
        let outcome = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await call.container.commit(request)
        }
        if case .committed = outcome { return JSONResponse.make(outcome, status: 200) }
        return JSONResponse.make(outcome, status: 409)
    }
}
