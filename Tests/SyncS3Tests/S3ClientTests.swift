import Foundation
import Synchronization
import Testing

@testable import SyncS3

/// The client without a server: what it sends (signed, addressed, conditional) and what it makes
/// of answers and failures (retries, error kinds, never a secret in an error).
@Suite struct S3ClientTests {
    /// Answers from a script and records the requests.
    final class ScriptedTransport: S3Transport, Sendable {
        let script: Mutex<[Result<S3HTTPResponse, S3Error>]>
        let sent = Mutex<[S3HTTPRequest]>([])
        init(_ script: [Result<S3HTTPResponse, S3Error>]) { self.script = Mutex(script) }

        func send(_ request: S3HTTPRequest, maxBody: Int, timeout: Duration) async throws(S3Error) -> S3HTTPResponse {
            sent.withLock { $0.append(request) }
            let next = script.withLock { $0.isEmpty ? .failure(.transient("script ended")) : $0.removeFirst() }
            return try next.get()
        }
        var requests: [S3HTTPRequest] { sent.withLock { $0 } }
    }

    final class Sleeps: Sendable {
        private let waits = Mutex<[Duration]>([])
        func record(_ duration: Duration) { waits.withLock { $0.append(duration) } }
        var all: [Duration] { waits.withLock { $0 } }
    }

    static let credentials = S3Credentials(
        accessKeyID: "AKIDTEST", secretAccessKey: "SUPERSECRET", sessionToken: "SESSIONTOKEN")

    static func client(_ transport: ScriptedTransport, url: String = "s3://chunks/pre?endpoint=http://127.0.0.1:7480")
        throws -> (S3Client, Sleeps)
    {
        let sleeps = Sleeps()
        let client = S3Client(
            location: try S3Location(parsing: url), credentials: credentials, transport: transport,
            retryPolicy: S3RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100)),
            now: { Date(timeIntervalSince1970: 1_440_938_160) }, random: { 0.5 },
            sleep: { duration in sleeps.record(duration) })
        return (client, sleeps)
    }

    @Test func conditionalPutIsSignedAndAddressed() async throws {
        let transport = ScriptedTransport([.success(S3HTTPResponse(status: 200, headers: [("ETag", "\"abc\"")]))])
        let (client, _) = try Self.client(transport)
        let etag = try await client.put("a b/ü", data: Data("hello".utf8), ifAbsent: true)
        #expect(etag == "abc")
        let request = try #require(transport.requests.first)
        #expect(request.method == "PUT")
        #expect(request.url == "http://127.0.0.1:7480/chunks/pre/a%20b/%C3%BC")
        let headers = Dictionary(request.headers.map { ($0.name.lowercased(), $0.value) }) { a, _ in a }
        #expect(headers["if-none-match"] == "*")
        #expect(headers["host"] == "127.0.0.1:7480")
        #expect(headers["x-amz-date"] == "20150830T123600Z")
        #expect(headers["x-amz-content-sha256"] == SigV4Request.hash(Data("hello".utf8)))
        #expect(headers["x-amz-security-token"] == "SESSIONTOKEN")
        let authorization = try #require(headers["authorization"])
        #expect(authorization.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDTEST/20150830/us-east-1/s3/aws4_request, "))
        #expect(
            authorization.contains(
                "SignedHeaders=host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token,"))
        #expect(!authorization.contains("SUPERSECRET"))
        #expect(request.body == Data("hello".utf8))
    }

    @Test func virtualHostListRequest() async throws {
        let xml =
            "<ListBucketResult><Contents><Key>p/k</Key><Size>3</Size><ETag>\"e\"</ETag></Contents>"
            + "<IsTruncated>false</IsTruncated></ListBucketResult>"
        let transport = ScriptedTransport([.success(S3HTTPResponse(status: 200, body: Data(xml.utf8)))])
        let (client, _) = try Self.client(transport, url: "s3://bkt/p?region=eu-west-3")
        let page = try await client.list(maxKeys: 5)
        #expect(page.objects == [.init(key: "k", size: 3, etag: "e")])
        #expect(
            transport.requests.first?.url
                == "https://bkt.s3.eu-west-3.amazonaws.com/?list-type=2&max-keys=5&prefix=p%2F")
    }

    @Test func transientFailuresAreRetriedWithBackoff() async throws {
        let transport = ScriptedTransport([
            .success(S3HTTPResponse(status: 503, body: Data("<Error><Code>SlowDown</Code></Error>".utf8))),
            .failure(.transient("connection reset")),
            .success(S3HTTPResponse(status: 200, body: Data("data".utf8))),
        ])
        let (client, sleeps) = try Self.client(transport)
        #expect(try await client.get("k") == Data("data".utf8))
        #expect(transport.requests.count == 3)
        #expect(sleeps.all == [.milliseconds(50), .milliseconds(100)])  // half of 100, 200 ms
    }

    @Test func transientAfterRetriesIsNeverNotFound() async throws {
        let transport = ScriptedTransport(Array(repeating: .success(S3HTTPResponse(status: 500)), count: 3))
        let (client, _) = try Self.client(transport)
        await #expect(throws: S3Error.transient("HTTP 500")) { try await client.head("k") }
        #expect(transport.requests.count == 3)
    }

    @Test func notFoundAndRefusalsAreNotRetried() async throws {
        let transport = ScriptedTransport([
            .success(S3HTTPResponse(status: 404, body: Data("<Error><Code>NoSuchKey</Code></Error>".utf8))),
            .success(S3HTTPResponse(status: 412)),
            .success(
                S3HTTPResponse(
                    status: 403,
                    body: Data("<Error><Code>SignatureDoesNotMatch</Code><StringToSign>x</StringToSign></Error>".utf8))),
        ])
        let (client, _) = try Self.client(transport)
        await #expect(throws: S3Error.notFound(key: "k")) { try await client.get("k") }
        await #expect(throws: S3Error.preconditionFailed(key: "k")) {
            try await client.put("k", data: Data(), ifAbsent: true)
        }
        do {
            try await client.delete("k")
            Issue.record("a 403 was accepted")
        } catch {
            #expect(error == .refused(status: 403, code: "SignatureDoesNotMatch"))
            #expect(!error.description.contains("SUPERSECRET") && !error.description.contains("SESSIONTOKEN"))
        }
        #expect(transport.requests.count == 3)
    }

    @Test func theClientsDescriptionHidesTheSecret() throws {
        let (client, _) = try Self.client(ScriptedTransport([]))
        for text in [String(describing: client), String(reflecting: client)] {
            #expect(text.contains("AKIDTEST"))  // the reflection does reach the credentials
            #expect(!text.contains("SUPERSECRET") && !text.contains("SESSIONTOKEN"))
        }
    }

    @Test func oversizedObjectsAreRefusedBeforeSending() async throws {
        let transport = ScriptedTransport([])
        let (client, _) = try Self.client(transport)
        await #expect(throws: S3Error.self) {
            try await client.put("k", data: Data(count: S3Client.defaultMaxObjectSize + 1))
        }
        #expect(transport.requests.isEmpty)
    }
}
