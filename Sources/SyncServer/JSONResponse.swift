import Foundation
import HTTPTypes
import Hummingbird

/// Responses with a JSON body (Foundation's `JSONEncoder` of the SyncBackend types) or none.
///
/// Small answers are encoded on the calling thread; those that may be large (entries with their
/// manifests, commit outcomes; change pages: `ChangePage`) on a Dispatch thread (`Offload`),
/// keeping the cooperative pool free.
enum JSONResponse {
    static func make(_ value: some Encodable, status: Int) -> Response {
        guard let body = try? JSONEncoder().encode(value) else { return encodingFailure }
        return bytes(body, status: status, contentType: "application/json")
    }

    /// Answers from this estimated size on are encoded off the cooperative pool.
    static let offloadedEncodingBytes = 64 << 10

    /// `make`, off the cooperative pool if `estimatedBytes` (an upper bound of the JSON's size)
    /// is `offloadedEncodingBytes` or more.
    static func make(_ value: some Encodable & Sendable, status: Int, estimatedBytes: Int) async -> Response {
        guard estimatedBytes >= offloadedEncodingBytes else { return make(value, status: status) }
        let body = await Offload.run { () -> Data? in try? JSONEncoder().encode(value) }
        guard let body else { return encodingFailure }
        return json(body, status: status)
    }

    /// A response whose body is JSON encoded already.
    static func json(_ body: Data, status: Int) -> Response {
        bytes(body, status: status, contentType: "application/json")
    }

    /// Cannot happen for the protocol's types; still an answer of this protocol.
    private static var encodingFailure: Response {
        let fallback = #"{"error":"storageFailure","message":"cannot encode the answer"}"#
        return bytes(Array(fallback.utf8), status: 507, contentType: "application/json")
    }

    /// `body` copied once, into the response's buffer.
    static func bytes(
        _ body: some Collection<UInt8>, status: Int, contentType: String, headers: HTTPFields = [:]
    ) -> Response {
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
        case 408: return .requestTimeout
        case 409: return .conflict
        case 412: return .preconditionFailed
        case 413: return .contentTooLarge
        case 422: return .unprocessableContent
        case 429: return .tooManyRequests
        case 503: return .serviceUnavailable
        case 507: return HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        default: return HTTPResponse.Status(code: code)
        }
    }
}
