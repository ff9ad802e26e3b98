import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One HTTP exchange as the S3 client needs it, so that the client's signing, retries and error
/// mapping can be tested without a server and the real transport stays a thin adapter.
public struct S3HTTPRequest: Sendable {
    public var method: String
    /// `scheme://host[:port]/encoded-path[?encoded-query]`, exactly as signed.
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: Data?
}

public struct S3HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Data

    public init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Sends one request. Throws `S3Error.transient` when no answer came (connection refused or
/// reset, timeout) and `S3Error.invalidResponse` when the body is larger than `maxBody`.
public protocol S3Transport: Sendable {
    func send(_ request: S3HTTPRequest, maxBody: Int, timeout: Duration) async throws(S3Error) -> S3HTTPResponse
}

/// The transport over async-http-client.
public struct AsyncHTTPClientTransport: S3Transport {
    private let client: HTTPClient

    /// Uses `client`, which the caller owns and shuts down. Make it with `makeHTTPClient` so that a
    /// dead endpoint fails within seconds.
    public init(client: HTTPClient) { self.client = client }

    /// The connect deadline of `makeHTTPClient`: async-http-client's default is 10 s, and by
    /// default its pool keeps reconnecting until the request's own deadline (30 s for S3), so a
    /// dead endpoint would hold every request for minutes across the client's retries.
    public static let defaultConnectTimeout: Duration = .seconds(2)

    /// The longest silence of `makeHTTPClient` while an answer is awaited or read: a server that
    /// accepts the connection and then says nothing (hung) fails the attempt after it, instead of
    /// at the request's 30 s deadline. A slow but flowing transfer is not cut.
    public static let defaultReadTimeout: Duration = .seconds(10)

    /// An HTTP client for S3 requests: a connection attempt gives up after `connectTimeout`, and a
    /// refused connection fails the request at once (`retryConnectionEstablishment` off) instead
    /// of being retried by the pool until the request's deadline: `S3Client`'s retry policy does
    /// the retrying, with backoff. An attempt whose server stays silent for `readTimeout` fails
    /// (transient). The caller owns the client and shuts it down.
    public static func makeHTTPClient(
        connectTimeout: Duration = defaultConnectTimeout, readTimeout: Duration = defaultReadTimeout
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = timeAmount(connectTimeout)
        configuration.timeout.read = timeAmount(readTimeout)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(
            Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    public func send(_ request: S3HTTPRequest, maxBody: Int, timeout: Duration) async throws(S3Error) -> S3HTTPResponse
    {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let deadline = Self.timeAmount(timeout)
        do {
            let response = try await client.execute(outgoing, timeout: deadline)
            var body = Data()
            if request.method != "HEAD" {
                do {
                    body = Data(try await response.body.collect(upTo: maxBody).readableBytesView)
                } catch is NIOTooManyBytesError {
                    throw S3Error.invalidResponse("a body larger than \(maxBody) bytes")
                }
            }
            return S3HTTPResponse(
                status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: body)
        } catch let error as S3Error {
            throw error
        } catch {
            // No answer: the request may or may not have reached the server; the caller retries.
            // The message names the kind of failure only, never the request's headers.
            throw .transient("no answer (\(String(describing: type(of: error))): \(Self.summary(error)))")
        }
    }

    private static func summary(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return String(describing: error) }
        return String(describing: error).prefix(200).description
    }
}

extension AsyncHTTPClientTransport {
    /// A transport over a client of its own (`makeHTTPClient()`), and the one way to shut that
    /// client down (call it once, when no request is in flight any more): for callers that do
    /// not import AsyncHTTPClient (`syncfs-mount serve --database`).
    public static func makeOwned() -> (transport: AsyncHTTPClientTransport, shutdown: @Sendable () -> Void) {
        let client = makeHTTPClient()
        return (AsyncHTTPClientTransport(client: client), { try? client.syncShutdown() })
    }
}
