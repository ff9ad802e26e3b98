import HTTPTypes
import Hummingbird
import SyncBackend

/// A request the server refuses or cannot serve: the protocol's error code and a message, sent as
/// the `WireError` JSON body with the code's status (doc/PROTOCOL.md, "Error codes").
///
/// Every failure of a request becomes one of these; nothing else reaches Hummingbird (whose own
/// answers have no protocol body).
struct WireFailure: Error, Sendable {
    let code: WireError.Code
    let message: String
    /// Extra response headers (`WWW-Authenticate` on 401, `Allow` on 405).
    var headers: HTTPFields = [:]

    init(_ code: WireError.Code, _ message: String, headers: HTTPFields = [:]) {
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The one translation of container errors to the protocol's (exhaustive: a new case of
    /// `ContainerProtocolError` must be decided here).
    init(_ error: ContainerProtocolError) {
        switch error {
        case .invalidRequest(let reason):
            self.init(.invalidRequest, reason)
        case .unavailable(let reason), .storageUnavailable(let reason):
            // A container that cannot be reached from the server is its storage (database, chunk
            // store, disk) being away: the server itself answers (`StorageOutageLog`).
            self.init(.storageUnavailable, reason, headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
        case .busy(let reason):
            self.init(.unavailable, reason, headers: [.retryAfter: "1"])
        case .storageFailure(let reason):
            self.init(.storageFailure, reason)
        case .chunkNotFound(let hash):
            self.init(.chunkNotFound, "no chunk \(hash) is stored")
        case .corruptChunk(let hash):
            // The server's stored copy is damaged: a storage failure, never "not found".
            self.init(.storageFailure, "the stored copy of chunk \(hash) is damaged")
        }
    }

    /// The failure of a request whose token could not be checked because the token store (a
    /// database) cannot be read: the server's storage is away.
    static func tokenStoreUnreadable(_ error: any Error) -> WireFailure {
        WireFailure(
            .storageUnavailable, "the token database cannot be read: \(error)",
            headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
    }

    /// `body`'s result, its container error translated.
    static func translating<T>(
        _ body: () async throws(ContainerProtocolError) -> T
    ) async throws(WireFailure) -> T {
        do {
            return try await body()
        } catch {
            throw WireFailure(error)
        }
    }

    static func unauthorized(_ message: String) -> WireFailure {
        WireFailure(.unauthorized, message, headers: [.wwwAuthenticate: WireProtocol.authorizationScheme])
    }

    var response: Response {
        var response = JSONResponse.make(WireError(code, message), status: code.status)
        response.headers.append(contentsOf: headers)
        return response
    }
}
