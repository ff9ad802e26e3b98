import Foundation
import SyncBackend
import Testing

@testable import SyncS3

/// The chunk store without a server: which requests it sends and what it makes of S3's answers
/// (transient failures are `unavailable`, never `chunkNotFound`; refusals name S3's code and never a
/// credential; an existing object is kept, a damaged one replaced).
@Suite struct S3ChunkBlobStoreMappingTests {
    typealias ScriptedTransport = S3ClientTests.ScriptedTransport

    static func store(_ transport: ScriptedTransport) throws -> S3ChunkBlobStore {
        let client = S3ChunkBlobStore.client(
            location: try S3Location(parsing: "s3://chunks/team?endpoint=http://127.0.0.1:7480"),
            credentials: S3ClientTests.credentials, transport: transport,
            retryPolicy: S3RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1)))
        return S3ChunkBlobStore(client: client)
    }

    static let chunk = Data("hello, chunk".utf8).withUnsafeBytes { ChunkCodec.encode($0) }
    static func response(_ status: Int, _ body: String = "", headers: [(String, String)] = []) -> Result<
        S3HTTPResponse, S3Error
    > {
        .success(S3HTTPResponse(status: status, headers: headers.map { ($0.0, $0.1) }, body: Data(body.utf8)))
    }

    @Test func keysAreContentAddressedWithATwoHexFanOut() async throws {
        let hex = Self.chunk.hash.hex
        #expect(S3ChunkBlobStore.key(Self.chunk.hash) == "chunks/\(hex.prefix(2))/\(hex)")
        let transport = ScriptedTransport([Self.response(200)])
        try await Self.store(transport).put(Self.chunk)
        let request = try #require(transport.requests.first)
        #expect(request.method == "PUT")
        #expect(request.url == "http://127.0.0.1:7480/chunks/team/chunks/\(hex.prefix(2))/\(hex)")
        #expect(request.headers.contains { $0.name == "If-None-Match" && $0.value == "*" })
        #expect(request.body.map(Array.init) == LocalChunkFile.encode(Self.chunk))
    }

    /// 412: the object exists with this chunk's size, so it is kept (one HEAD, no second PUT).
    @Test func anExistingObjectIsNotRewritten() async throws {
        let size = String(LocalChunkFile.encode(Self.chunk).count)
        let transport = ScriptedTransport([
            Self.response(412, "<Error><Code>PreconditionFailed</Code></Error>"),
            Self.response(200, headers: [("Content-Length", size), ("ETag", "\"e\"")]),
        ])
        try await Self.store(transport).put(Self.chunk)
        #expect(transport.requests.map(\.method) == ["PUT", "HEAD"])
    }

    /// An ETag that is a plain MD5 must be the body's; another form is judged by size alone.
    @Test func theStoredObjectIsJudgedBySizeAndMD5() {
        let body = Data("chunk bytes".utf8)
        let md5 = "b9b8ffd1b1f1b7c1c0a0d0c1c1d0e0f0"
        let real = "0628eb1ea0e4bef9a16f5172e092e116"  // md5sum of "chunk bytes"
        #expect(S3ChunkBlobStore.matches(.init(size: 11, etag: real), body))
        #expect(S3ChunkBlobStore.matches(.init(size: 11, etag: real.uppercased()), body))
        #expect(!S3ChunkBlobStore.matches(.init(size: 11, etag: md5), body))
        #expect(!S3ChunkBlobStore.matches(.init(size: 12, etag: real), body))
        #expect(S3ChunkBlobStore.matches(.init(size: 11, etag: "\(md5)-2"), body))
        #expect(S3ChunkBlobStore.matches(.init(size: 11, etag: ""), body))
    }

    /// 412 on an object of another size (truncated, or not ours): replaced by a plain PUT.
    @Test func aDamagedObjectIsReplaced() async throws {
        let transport = ScriptedTransport([
            Self.response(412, "<Error><Code>PreconditionFailed</Code></Error>"),
            Self.response(200, headers: [("Content-Length", "3"), ("ETag", "\"e\"")]),
            Self.response(200),
        ])
        try await Self.store(transport).put(Self.chunk)
        #expect(transport.requests.map(\.method) == ["PUT", "HEAD", "PUT"])
        #expect(!transport.requests[2].headers.contains { $0.name == "If-None-Match" })
    }

    /// A store that refuses conditional writes (`501 NotImplemented`) is not "unavailable" for
    /// ever: the chunk is looked up, then written plainly when absent, kept when present.
    @Test func aStoreWithoutConditionalWritesStillStores() async throws {
        let notImplemented = Self.response(501, "<Error><Code>NotImplemented</Code></Error>")
        let absent = ScriptedTransport([notImplemented, Self.response(404), Self.response(200)])
        try await Self.store(absent).put(Self.chunk)
        #expect(absent.requests.map(\.method) == ["PUT", "HEAD", "PUT"])
        #expect(!absent.requests[2].headers.contains { $0.name == "If-None-Match" })
        let size = String(LocalChunkFile.encode(Self.chunk).count)
        let present = ScriptedTransport([notImplemented, Self.response(200, headers: [("Content-Length", size)])])
        try await Self.store(present).put(Self.chunk)
        #expect(present.requests.map(\.method) == ["PUT", "HEAD"])
    }

    /// `make` parses the URL and takes credentials from the environment only; its errors name
    /// what is missing and never a secret.
    @Test func makeTakesCredentialsFromTheEnvironmentOnly() throws {
        let url = "s3://chunks/team?endpoint=http://127.0.0.1:7480&region=default&style=path"
        let environment = [
            "AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "SUPERSECRET", "HOME": "/nonexistent",
        ]
        let store = try S3ChunkBlobStore.make(url: url, environment: environment, transport: ScriptedTransport([]))
        #expect(store.client.location.prefix == "team/" && store.client.location.addressing == .path)
        #expect(store.client.maxObjectSize == S3ChunkBlobStore.maxObjectBytes)
        #expect(!String(reflecting: store).contains("SUPERSECRET"))
        do {
            _ = try S3ChunkBlobStore.make(
                url: url, environment: ["AWS_SECRET_ACCESS_KEY": "SUPERSECRET"], transport: ScriptedTransport([]))
            Issue.record("a store without an access key was made")
        } catch {
            #expect("\(error)".contains("AWS_ACCESS_KEY_ID") && !"\(error)".contains("SUPERSECRET"))
        }
        #expect(throws: S3Location.ParseError.credentialsInURL) {
            try S3ChunkBlobStore.make(
                url: url + "&aws_secret_access_key=SUPERSECRET", environment: environment,
                transport: ScriptedTransport([]))
        }
    }

    /// Every transient answer, after the client's retries, is `unavailable`, never "not found":
    /// 5xx, SlowDown, 429, a proxy's HTML page (even a 404 one), no connection at all.
    @Test func transientFailuresAreUnavailable() async throws {
        let html = "<html><body><h1>502 Bad Gateway</h1></body></html>"
        let answers: [Result<S3HTTPResponse, S3Error>] = [
            Self.response(500), Self.response(503, "<Error><Code>SlowDown</Code></Error>"), Self.response(429),
            Self.response(502, html), Self.response(404, "<html>Not Found</html>"),
            .failure(.transient("no answer (connection refused)")),
        ]
        for answer in answers {
            for operation in ["get", "put", "delete"] {
                let transport = ScriptedTransport(Array(repeating: answer, count: 3))
                let store = try Self.store(transport)
                do {
                    switch operation {
                    case "get": _ = try await store.get(Self.chunk.hash)
                    case "put": try await store.put(Self.chunk)
                    default: try await store.delete(Self.chunk.hash)
                    }
                    Issue.record("\(operation) succeeded on \(answer)")
                } catch {
                    guard case .unavailable = error else {
                        Issue.record("\(operation) on \(answer): \(error), not unavailable")
                        continue
                    }
                }
                #expect(transport.requests.count == 3, "\(operation) on \(answer) was retried")
            }
        }
    }

    @Test func noSuchKeyIsChunkNotFoundButNoSuchBucketIsNot() async throws {
        let missingKey = ScriptedTransport([Self.response(404, "<Error><Code>NoSuchKey</Code></Error>")])
        await #expect(throws: ContainerProtocolError.chunkNotFound(Self.chunk.hash)) {
            try await Self.store(missingKey).get(Self.chunk.hash)
        }
        let missingBucket = ScriptedTransport([Self.response(404, "<Error><Code>NoSuchBucket</Code></Error>")])
        do {
            _ = try await Self.store(missingBucket).get(Self.chunk.hash)
            Issue.record("a missing bucket served a chunk")
        } catch {
            guard case .storageFailure(let reason)? = error as? ContainerProtocolError else {
                Issue.record("a missing bucket is \(error)")
                return
            }
            #expect(reason.contains("NoSuchBucket"))
        }
        // Deleting what is gone (204, or a 404 from a store that says so) succeeds.
        try await Self.store(ScriptedTransport([Self.response(204)])).delete(Self.chunk.hash)
        try await Self.store(ScriptedTransport([Self.response(404, "<Error><Code>NoSuchKey</Code></Error>")]))
            .delete(Self.chunk.hash)
    }

    /// A 403 is sent once (not retried), says what to check, and carries no credential.
    @Test func aRefusalIsClearAndHidesTheCredentials() async throws {
        let body = "<Error><Code>SignatureDoesNotMatch</Code><StringToSign>x</StringToSign></Error>"
        let transport = ScriptedTransport(Array(repeating: Self.response(403, body), count: 3))
        do {
            _ = try await Self.store(transport).get(Self.chunk.hash)
            Issue.record("a 403 served a chunk")
        } catch {
            guard case .storageFailure? = error as? ContainerProtocolError else {
                Issue.record("a 403 is \(error)")
                return
            }
            let text = "\(error) \(String(reflecting: error))"
            #expect(text.contains("403") && text.contains("SignatureDoesNotMatch") && text.contains("credentials"))
            #expect(!text.contains("SUPERSECRET") && !text.contains("SESSIONTOKEN"))
        }
        #expect(transport.requests.count == 1)
    }

    /// Chunks larger than the server accepts are refused before anything is sent.
    @Test func anOversizedChunkIsRefusedBeforeSending() async throws {
        let transport = ScriptedTransport([])
        let huge = EncodedChunk(
            hash: Self.chunk.hash, encoding: .raw, plainLength: WireProtocol.maxChunkPlainLength + 1,
            payload: [UInt8](repeating: 0, count: WireProtocol.maxChunkPlainLength + 1))
        await #expect(throws: ContainerProtocolError.self) { try await Self.store(transport).put(huge) }
        #expect(transport.requests.isEmpty)
    }
}
