import Foundation
import HTTPTypes
import Hummingbird
import SyncBackend

/// `POST /v1/login`: a user's credentials for a device token (`LoginService`), without a bearer
/// token. Answers:
/// - `200` with `LoginService.Grant` (the token, shown once);
/// - `401 unauthorized` for wrong credentials, the same words whatever was wrong; or "a TOTP code
///   is needed" once the password was right;
/// - `403 forbidden` when the user is not a member of the container;
/// - `429 tooManyRequests` with `Retry-After` when the account or the address failed too often;
/// - `503 unavailable` with `Retry-After` when `LoginSlots.limit` logins are being checked (each
///   holds a password hash's memory);
/// - `400 invalidRequest` for a malformed body, `404 notFound` on a server without accounts.
extension SyncResponder {
    func login(_ request: Request, address: String?) async throws(WireFailure) -> Response {
        guard let logins else { throw WireFailure(.notFound, "this server has no user accounts") }
        let asked = try await RequestReading.smallJSON(LoginService.Request.self, from: request)
        let result: Result<LoginService.Grant, LoginService.LoginRefusal>
        do {
            result = try await logins.login(asked, address: address)
        } catch {
            throw WireFailure.tokenStoreUnreadable(error)
        }
        switch result {
        case .success(let grant): return JSONResponse.make(grant, status: 200)
        case .failure(.wrongCredentials):
            throw WireFailure.unauthorized("the user name, password or code is wrong")
        case .failure(.totpNeeded):
            throw WireFailure.unauthorized("a TOTP code is needed (totp)")
        case .failure(.notAMember):
            throw WireFailure(.forbidden, "the user is not a member of '\(asked.container)'")
        case .failure(.throttled(let seconds)):
            throw WireFailure(
                .tooManyRequests, "too many failed logins; retry later", headers: [.retryAfter: String(seconds)])
        case .failure(.badRequest(let why)):
            throw WireFailure(.invalidRequest, why)
        case .failure(.busy):
            throw WireFailure(
                .unavailable, "the server is checking as many logins as it can; retry in a moment",
                headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
        }
    }
}
