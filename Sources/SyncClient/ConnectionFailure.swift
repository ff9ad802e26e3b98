import AsyncHTTPClient
import Glibc
import NIOCore

/// A request that got no answer, described for people: "connection refused", "no connection
/// within 5 s", rather than the HTTP library's error values. TLS failures are `TLSFailure`'s;
/// anything not recognised keeps the library's description (it names no build path).
enum ConnectionFailure {
    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError {
            return String(cString: strerror(io.errnoCode)).lowercased()
        }
        if let http = error as? HTTPClientError {
            switch http {
            case .connectTimeout: return "no connection within 5 s"
            case .deadlineExceeded: return "no answer in time"
            case .readTimeout: return "the answer stalled"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: return "\(http)"
            }
        }
        return "\(error)"
    }
}
