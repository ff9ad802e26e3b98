import Hummingbird
import SyncBackend

/// `GET .../changes` and `GET .../changes/wait`.
extension SyncResponder {
    /// A page of at most `limit` entries and `WireProtocol.maxChangePageBytes` (`ChangePage`): in
    /// binary if `Accept` names `ChangePageFormat.mediaType`, else JSON.
    func changes(_ call: Call) async throws(WireFailure) -> Response {
        let query = call.query
        let accept = call.request.headers[values: .accept].joined(separator: ",")
        let form: ChangePage.Form = ChangePageFormat.isAccepted(by: accept) ? .binary : .json
        let cursor = FeedCursor(token: query[WireProtocol.Query.after] ?? "")
        let limit = try RequestReading.integer(
            query, WireProtocol.Query.limit, in: 1...WireProtocol.maxChangesLimit,
            default: WireProtocol.defaultChangesLimit)
        let page = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await ChangePage.fetch(from: call.container, after: cursor, limit: limit, form: form)
        }
        // The form depends on `Accept`: a cache must not hand one client's form to another.
        return JSONResponse.bytes(
            page.body, status: 200, contentType: page.form.contentType, headers: [.vary: "Accept"])
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
        let outcome = try await whileAccessLasts(call) { () async throws(WireFailure) -> Bool in
            try await WireFailure.translating { () async throws(ContainerProtocolError) in
                try await shutdown.unlessStopping { () async throws(ContainerProtocolError) in
                    try await container.waitForChanges(after: cursor, timeout: .milliseconds(milliseconds))
                }
            }
        }
        guard let changed = outcome else {
            throw WireFailure.unauthorized("the token was revoked, expired or lost its access to '\(call.name)'")
        }
        return JSONResponse.make(WaitResponse(changed: changed), status: 200)
    }

    /// `wait()`'s result, or nil as soon as the call's token no longer opens its container (read
    /// afresh every `AccessControl.longPollRecheck`; `wait` is then cancelled). A store that
    /// cannot be read during the wait ends it as the first check would (`503`).
    func whileAccessLasts(
        _ call: Call, _ wait: @escaping @Sendable () async throws(WireFailure) -> Bool
    ) async throws(WireFailure) -> Bool? {
        let tokens = tokens
        let result = await withTaskGroup(of: Result<Bool?, WireFailure>?.self) { group in
            group.addTask {
                do throws(WireFailure) { return .success(try await wait()) } catch { return .failure(error) }
            }
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await Task.sleep(for: AccessControl.longPollRecheck)
                    } catch {
                        return nil
                    }
                    do throws(SyncServerError) {
                        let grant = try await tokens.authenticate(token: call.token, address: call.address)
                        if grant?.roles[call.name] == nil { return .success(nil) }
                    } catch {
                        return .failure(WireFailure.tokenStoreUnreadable(error))
                    }
                }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let result else {
            throw WireFailure(.unavailable, "the wait was cancelled", headers: [.retryAfter: "1"])
        }
        return try result.get()
    }
}
