import AsyncHTTPClient
import Foundation
import TestSupport
import Testing

@testable import SyncS3

/// The client against a real Ceph RGW started by `scripts/services.sh start` (which
/// `scripts/test.sh` runs): every operation, the conditional PUT, list pages, 404 as not-found,
/// path and virtual-host style, a wrong secret as refused and an unreachable endpoint as transient. Without the services'
/// environment these tests fail, saying so: they never skip.
@Suite(.serialized) struct S3IntegrationTests {
    struct Server {
        let endpoint: String
        let region: String
        let credentials: S3Credentials

        static func fromEnvironment() throws -> Server {
            let services = try ServicesEnvironment.require(.s3)
            return Server(
                endpoint: services.s3Endpoint, region: services.s3Region,
                credentials: S3Credentials(
                    accessKeyID: services.s3AccessKeyID, secretAccessKey: services.s3SecretAccessKey))
        }
    }

    struct MissingService: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs `body` with a client on a fresh bucket (prefix `run/`), then shuts the HTTP client down.
    static func withClient(
        credentials: S3Credentials? = nil, retryPolicy: S3RetryPolicy = S3RetryPolicy(),
        endpoint: String? = nil, requestTimeout: Duration = .seconds(10),
        _ body: (S3Client, Server) async throws -> Void
    ) async throws {
        let server = try Server.fromEnvironment()
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let bucket = "syncfs-test-\(UUID().uuidString.prefix(8).lowercased())"
            let location = try S3Location(
                parsing: "s3://\(bucket)/run?endpoint=\(endpoint ?? server.endpoint)&region=\(server.region)")
            let client = S3Client(
                location: location, credentials: credentials ?? server.credentials,
                transport: AsyncHTTPClientTransport(client: http), retryPolicy: retryPolicy,
                requestTimeout: requestTimeout)
            do {
                try await body(client, server)
            } catch {
                await removeBucket(client)
                throw error
            }
            await removeBucket(client)
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// Deletes what a test left under the client's prefix, then the bucket (if the test made
    /// one), so the throwaway RGW does not accumulate buckets run after run.
    static func removeBucket(_ client: S3Client) async {
        var token: String?
        repeat {
            guard let page = try? await client.list(continuationToken: token) else { break }
            for object in page.objects { try? await client.delete(object.key) }
            token = page.continuationToken
        } while token != nil
        try? await client.deleteBucket()
    }

    @Test func putGetHeadListDelete() async throws {
        try await Self.withClient { client, _ in
            try await client.createBucket()
            let data = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let etag = try await client.put("chunks/one", data: data)
            #expect(!etag.isEmpty && !etag.hasPrefix("\""))
            #expect(try await client.get("chunks/one") == data)
            #expect(try await client.head("chunks/one") == S3Client.ObjectInfo(size: 100_000, etag: etag))

            // A key that needs every rule of the path encoding.
            let odd = "odd/a b+ü&=?;%41~(x).bin"
            try await client.put(odd, data: Data("odd".utf8))
            #expect(try await client.get(odd) == Data("odd".utf8))

            let page = try await client.list()
            #expect(page.objects.map(\.key) == ["chunks/one", odd])
            #expect(page.objects.first?.size == 100_000 && page.objects.first?.etag == etag)
            #expect(page.continuationToken == nil)
            #expect(try await client.list(prefix: "odd/").objects.map(\.key) == [odd])

            let first = try await client.list(maxKeys: 1)
            #expect(first.objects.map(\.key) == ["chunks/one"])
            let token = try #require(first.continuationToken)
            let second = try await client.list(continuationToken: token, maxKeys: 1)
            #expect(second.objects.map(\.key) == [odd])

            try await client.delete("chunks/one")
            await #expect(throws: S3Error.notFound(key: "chunks/one")) { try await client.get("chunks/one") }
            await #expect(throws: S3Error.notFound(key: "chunks/one")) { try await client.head("chunks/one") }
            try await client.delete("chunks/one")  // deleting what is gone succeeds, as S3 does
            #expect(try await client.list().objects.map(\.key) == [odd])
        }
    }

    @Test func conditionalPutIsRefusedTheSecondTime() async throws {
        try await Self.withClient { client, _ in
            try await client.createBucket()
            try await client.put("chunk", data: Data("first".utf8), ifAbsent: true)
            await #expect(throws: S3Error.preconditionFailed(key: "chunk")) {
                try await client.put("chunk", data: Data("second".utf8), ifAbsent: true)
            }
            #expect(try await client.get("chunk") == Data("first".utf8))
        }
    }

    /// Sends each request to another host than the one in its URL, keeping the signed `Host`
    /// header: the test machine has no DNS for `BUCKET.localhost`.
    struct RedirectingTransport: S3Transport {
        let inner: any S3Transport
        let from: String
        let to: String

        func send(_ request: S3HTTPRequest, maxBody: Int, timeout: Duration) async throws(S3Error) -> S3HTTPResponse {
            var redirected = request
            redirected.url = request.url.replacingOccurrences(of: "://\(from)/", with: "://\(to)/")
            return try await inner.send(redirected, maxBody: maxBody, timeout: timeout)
        }
    }

    /// Virtual-host style end to end: RGW (`rgw dns name = localhost`) finds the bucket in `Host`.
    @Test func virtualHostStyle() async throws {
        let server = try Server.fromEnvironment()
        let endpoint = try #require(URL(string: server.endpoint))
        let port = try #require(endpoint.port)
        let bucket = "syncfs-vhost-\(UUID().uuidString.prefix(8).lowercased())"
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let location = try S3Location(
                parsing: "s3://\(bucket)/v?endpoint=http://localhost:\(port)&region=\(server.region)&addressing=virtual"
            )
            #expect(location.host == "\(bucket).localhost:\(port)")
            let transport = RedirectingTransport(
                inner: AsyncHTTPClientTransport(client: http), from: location.host, to: "127.0.0.1:\(port)")
            let client = S3Client(location: location, credentials: server.credentials, transport: transport)
            try await client.createBucket()
            try await client.put("k", data: Data("virtual".utf8), ifAbsent: true)
            #expect(try await client.get("k") == Data("virtual".utf8))
            #expect(try await client.list().objects.map(\.key) == ["k"])
            await #expect(throws: S3Error.notFound(key: "absent")) { try await client.head("absent") }
            await Self.removeBucket(client)
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    @Test func aWrongSecretIsRefusedNotNotFound() async throws {
        let server = try Server.fromEnvironment()
        let wrong = S3Credentials(accessKeyID: server.credentials.accessKeyID, secretAccessKey: "not-the-secret")
        try await Self.withClient(credentials: wrong) { client, _ in
            do {
                _ = try await client.get("anything")
                Issue.record("a wrong secret was accepted")
            } catch let error as S3Error {
                guard case .refused(403, _) = error else {
                    Issue.record("expected a 403 refusal, got \(error)")
                    return
                }
                #expect(!error.description.contains("not-the-secret"))
            }
        }
    }

    @Test func anUnreachableEndpointIsTransientAfterRetries() async throws {
        // Port 9 (discard) on loopback: nothing listens there on a test machine. async-http-client
        // keeps trying to connect until an attempt's deadline, so each attempt lasts its timeout.
        let policy = S3RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(10))
        try await Self.withClient(retryPolicy: policy, endpoint: "http://127.0.0.1:9", requestTimeout: .seconds(1)) {
            client, _ in
            let started = ContinuousClock.now
            do {
                _ = try await client.head("chunk")
                Issue.record("an unreachable endpoint answered")
            } catch let error as S3Error {
                #expect(error.isTransient, "\(error)")
            }
            #expect(ContinuousClock.now - started < .seconds(6))
        }
    }
}
