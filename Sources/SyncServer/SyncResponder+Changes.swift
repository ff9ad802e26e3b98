import Hummingbird
import SyncBackend

/// `GET .../changes` and `GET .../changes/wait`.
extension SyncResponder {
    /// A page of at most `limit` entries and `WireProtocol.maxChangePageBytes` of JSON (`ChangePage`).
    func changes(_ call: Call) async throws(WireFailure) -> Response {
        let query = call.query
        let cursor = FeedCursor(token: query[WireProtocol.Query.after] ?? "")
        let limit = try RequestReading.integer(
            query, WireProtocol.Query.limit, in: 1...WireProtocol.maxChangesLimit,
            default: WireProtocol.defaultChangesLimit)
        let page = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await ChangePage.fetch(from: call.container, after: cursor, limit: limit)
        }
        return JSONResponse.json(page.json, status: 200)
    }

    /// The long poll: answers as soon as a change after the cursor exists, after the timeout, or
    /// at once when the server begins to stop (`ShutdownSignal`).
    func wait(_ call: Call) async throws(WireFailure) -> Response {
        let query = call.query
        let cursor = FeedCursor(token: query[WireProtocol.Query.after] ?? "")
        let milliseconds = try RequestReading.integer(
            query, WireProtocol.Query.timeout, in: 0...WireProtocol.maxWaitMilliseconds,
            default: WireProtocol.defaultWaitMilliseconds)
        let container = call.container
        let changed = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await shutdown.unlessStopping { () async throws(ContainerProtocolError) in
                try await container.waitForChanges(after: cursor, timeout: .milliseconds(milliseconds))
            }
        }
        return JSONResponse.make(WaitResponse(changed: changed), status: 200)
    }
}
