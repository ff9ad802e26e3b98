import Foundation
import SyncBackend

/// Reading the server's answers: decoding bodies and turning refusals into
/// `ContainerProtocolError`, in one place.
enum WireAnswer {
    /// A refusal as the server sent it: its `WireError` code (nil when the body is not this
    /// protocol's error JSON, e.g. a proxy's page) and message.
    struct Refusal {
        let code: WireError.Code?
        let message: String
    }

    static func refusal(_ answer: Answer) -> Refusal {
        guard let error = try? JSONDecoder().decode(WireError.self, from: Data(answer.body)) else {
            return Refusal(code: nil, message: "HTTP status \(answer.status)")
        }
        return Refusal(code: WireError.Code(rawValue: error.error), message: error.message)
    }

    /// The error for an answer that is not the success the call expected. Only a client's own
    /// mistake (400, 405, 413, 422) and a call the container does not offer (501) are `invalidRequest`; everything else is retryable, because
    /// none of it says anything about the data (doc/PROTOCOL.md, "Retrying").
    static func failure(_ answer: Answer, address: ServerAddress) -> ContainerProtocolError {
        let refusal = refusal(answer)
        let said = "\(address.origin) answered \(answer.status): \(refusal.message)"
        if answer.status == 503 || answer.status == 429, refusal.code == nil {
            return .busy("\(address.origin) answered HTTP \(answer.status) (busy)")
        }
        guard let code = refusal.code else {
            return .unavailable("\(address.origin) answered HTTP \(answer.status), which is not this protocol's answer")
        }
        switch code {
        case .invalidRequest, .methodNotAllowed, .tooLarge, .chunkMismatch:
            return .invalidRequest(said)
        case .notImplemented:
            // The server's container cannot do this at all (no version history): asking again cannot help.
            return .invalidRequest(said)
        case .unauthorized, .forbidden:
            return .unavailable(
                "the server refused the token (\(said)); put a valid token in the token file (a mount reads it again)")
        case .notFound, .chunkNotFound, .entryNotFound:
            // A call that expects one of these handles it before asking here.
            return .unavailable(said)
        case .containerMismatch:
            return .unavailable(
                "\(said) — the server's container under this name is not the one this mount synced with; "
                    + "nothing is synced until that is fixed (mount it with a new --state-dir to start over)")
        case .unavailable, .tooManyRequests:
            // Only after `HTTPContainer.send`'s own retries gave up (it retries busy answers).
            return .busy(said)
        case .storageUnavailable:
            return .storageUnavailable(said)
        case .requestTimeout:
            // This client's request was too slow for the server (a slow or stalled uplink).
            return .unavailable(said)
        case .storageFailure:
            return .storageFailure(said)
        case .quotaExceeded:
            // Retryable: the change stays queued until there is room (status shows this message).
            return .storageFailure(said)
        }
    }

    /// The body decoded as `type`; a body that does not decode is not this protocol's answer.
    static func decode<Value: Decodable>(_ type: Value.Type, _ answer: Answer, address: ServerAddress)
        throws(ContainerProtocolError) -> Value
    {
        do {
            return try JSONDecoder().decode(type, from: Data(answer.body))
        } catch {
            throw .unavailable("\(address.origin) sent a \(Value.self) that does not decode: \(error)")
        }
    }

    /// A `changes` answer in the form its `Content-Type` names: binary (`ChangePageFormat`) or
    /// JSON (a server older than the binary form ignores `Accept`). A body that does not decode
    /// is not this protocol's answer.
    static func decodeChangePage(_ answer: Answer, address: ServerAddress) throws(ContainerProtocolError)
        -> ChangeBatch
    {
        let contentType = answer.header("Content-Type")?.split(separator: ";").first
        guard contentType?.trimmingCharacters(in: .whitespaces).lowercased() == ChangePageFormat.mediaType else {
            return try decode(ChangeBatch.self, answer, address: address)
        }
        do {
            return try ChangePageFormat.decode(answer.body)
        } catch {
            throw .unavailable("\(address.origin) sent a change page that does not decode: \(error)")
        }
    }

    /// `text` escaped for a query value.
    static func queryEscaped(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
