import AsyncHTTPClient
import Glibc
import NIOCore
import NIOSSL
import SyncBackend
import Synchronization

/// The HTTP clients of this process: one per trust setting (system roots, or one CA file),
/// made on first use and kept for the life of the process (an `HTTPClient` must be shut down
/// before it is released; a mount needs one for as long as it runs, and tests make many
/// containers, so sharing them is both simpler and cheaper — connections are pooled per host).
///
/// Every client: 5 s to connect, no retrying of failed connections, 45 s at most between two reads
/// of an answer, no redirects, no automatic decompression, HTTP/1.1; each request also sets its
/// own deadline (until the answer's head).
enum HTTPClientPool {
    private static let clients = Mutex<[String: HTTPClient]>([:])

    /// The longest silence while a response is read: longer than the longest change wait (the
    /// server sends nothing until it answers), so only a stalled connection hits it. A request's
    /// own deadline ends when the response head arrives; this one covers the body.
    static let readTimeout: TimeAmount = .milliseconds(Int64(WireProtocol.maxWaitMilliseconds) + 15_000)

    /// The client trusting the system's roots, or only the certificates in `caFile` (PEM).
    static func client(caFile: String?) throws(ClientSetupError) -> HTTPClient {
        try clients.withLock { clients throws(ClientSetupError) in
            if let client = clients[caFile ?? ""] { return client }
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile {
                do {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
                } catch {
                    let why =
                        access(caFile, R_OK) == 0
                        ? "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)" : String(cString: strerror(errno))
                    throw ClientSetupError(description: "cannot read the CA certificates in \(caFile): \(why)")
                }
            }
            var configuration = HTTPClient.Configuration(
                tlsConfiguration: tls, redirectConfiguration: .disallow,
                timeout: .init(connect: .seconds(5), read: readTimeout), decompression: .disabled)
            configuration.httpVersion = .http1Only
            // A refused or failed connection fails the request at once: the engine retries with
            // its own backoff, and an offline mount must learn it is offline in milliseconds, not
            // after the connect timeout (AHC would otherwise retry until then).
            configuration.connectionPool.retryConnectionEstablishment = false
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[caFile ?? ""] = client
            return client
        }
    }
}

/// A client setup that cannot be used (an unreadable CA file), with a message for people.
public struct ClientSetupError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
