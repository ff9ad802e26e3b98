import Foundation
import HTTPTypes
import Hummingbird

/// Responses with a JSON body (Foundation's `JSONEncoder` of the SyncBackend types) or none.
enum JSONResponse {
    static func make(_ value: some Encodable, status: Int) -> Response {
        guard let body = try? JSONEncoder().encode(value) else {
            // Cannot happen for the protocol's types; still an answer of this protocol.
            let fallback = #"{"error":"storageFailure","message":"cannot encode the answer"}"#
            return bytes(Array(fallback.utf8), status: 507, contentType: "application/json")
        }
        return bytes(Array(body), status: status, contentType: "application/json")
    }

    static func bytes(_ body: [UInt8], status: Int, contentType: String, headers: HTTPFields = [:]) -> Response {
        var fields: HTTPFields = [.contentType: contentType]
        fields.append(contentsOf: headers)
        return Response(
            status: Self.status(status), headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func empty(status: Int) -> Response {
        Response(status: Self.status(status))
    }

    /// The status with its standard reason phrase.
    static func status(_ code: Int) -> HTTPResponse.Status {
        switch code {
        case 200: return .ok
        case 204: return .noContent
        case 400: return .badRequest
        case 401: return .unauthorized
        case 403: return .forbidden
        case 404: return .notFound
        case 405: return .methodNotAllowed
        case 409: return .conflict
        case 413: return .contentTooLarge
        case 422: return .unprocessableContent
        case 503: return .serviceUnavailable
        case 507: return HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        default: return HTTPResponse.Status(code: code)
        }
    }
}
