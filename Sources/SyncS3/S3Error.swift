/// What went wrong with an S3 request, in the three kinds its callers act on. A transient failure
/// is never reported as `notFound`: a caller may treat `notFound` as "the object is absent" and
/// must not do so because a server was briefly unreachable. No case carries a credential.
public enum S3Error: Error, Equatable, CustomStringConvertible {
    /// The object does not exist: 404 `NoSuchKey` (or a 404 to a HEAD, which has no body). A
    /// missing bucket is `refused` (`NoSuchBucket`): a misconfigured bucket is not "every object
    /// is absent".
    case notFound(key: String)
    /// A conditional request's condition failed: 412 (or 409 on a concurrent conditional write).
    case preconditionFailed(key: String)
    /// The server refused the request and repeating it will not help: other 4xx (credentials,
    /// permissions, a malformed request). `code` is S3's error code when the body had one.
    case refused(status: Int, code: String?)
    /// Worth retrying later: 5xx, 429, S3's `SlowDown`, timeouts, refused or reset connections.
    /// Reported after the retries are spent.
    case transient(String)
    /// The server answered 2xx with a body this client cannot read.
    case invalidResponse(String)

    public var isTransient: Bool { if case .transient = self { true } else { false } }

    public var description: String {
        switch self {
        case .notFound(let key): "S3: no object \(key)"
        case .preconditionFailed(let key): "S3: the condition on \(key) failed (the object exists or changed)"
        case .refused(let status, let code): "S3 refused the request: HTTP \(status)\(code.map { " \($0)" } ?? "")"
        case .transient(let reason): "S3 unavailable: \(reason)"
        case .invalidResponse(let reason): "S3 answered something unreadable: \(reason)"
        }
    }

    /// The error of a non-2xx answer. `code` is the `<Code>` of the error body, if any; `method`
    /// is the request's (a 404 without an S3 error body is "not found" only for a HEAD, which
    /// never has a body: to a GET or a PUT it is a proxy's page, and worth retrying).
    public static func classify(status: Int, code: String?, key: String, method: String = "HEAD") -> S3Error {
        switch status {
        case 404 where code == "NoSuchKey" || code == "NotFound":
            return .notFound(key: key)
        case 404 where code == nil:
            return method == "HEAD" ? .notFound(key: key) : .transient("HTTP 404 without an S3 error (a proxy?)")
        case 412: return .preconditionFailed(key: key)
        case 409 where code == "ConditionalRequestConflict": return .preconditionFailed(key: key)
        // A store without a feature (e.g. conditional writes) says so for good; retrying won't help.
        case 501 where code == "NotImplemented": return .refused(status: status, code: code)
        case 408, 429: return .transient("HTTP \(status)")
        case 400 where code == "RequestTimeout" || code == "SlowDown": return .transient("HTTP \(status) \(code ?? "")")
        case 500...599: return .transient("HTTP \(status)\(code.map { " \($0)" } ?? "")")
        default: return .refused(status: status, code: code)
        }
    }
}
