import AsyncHTTPClient
import Foundation
import Glibc
import SyncBackend
import Synchronization
import TestSupport
import Testing

@testable import SyncS3

/// `S3ChunkBlobStore` against the real Ceph RGW of `scripts/services.sh start`: real encoded chunks
/// round-trip, a second put keeps the object, damaged or foreign objects are `corruptChunk`,
/// missing ones `chunkNotFound`, a dead endpoint `unavailable` within seconds, a wrong secret a
/// clear refusal, and prefixes keep stores apart. Without the services' environment these tests
/// fail, saying so: they never skip.
@Suite(.serialized) struct S3ChunkBlobStoreTests {
    typealias Server = S3IntegrationTests.Server

    /// Records each request's method and answer status, passing everything through.
    final class RecordingTransport: S3Transport, Sendable {
        let inner: any S3Transport
        private let log = Mutex<[String]>([])
        init(_ inner: any S3Transport) { self.inner = inner }

        func send(_ request: S3HTTPRequest, maxBody: Int, timeout: Duration) async throws(S3Error) -> S3HTTPResponse {
            do throws(S3Error) {
                let response = try await inner.send(request, maxBody: maxBody, timeout: timeout)
                log.withLock { $0.append("\(request.method) \(response.status)") }
                return response
            } catch {
                log.withLock { $0.append("\(request.method) failed") }
                throw error
            }
        }
        var entries: [String] { log.withLock { $0 } }
        func reset() { log.withLock { $0.removeAll() } }
    }

    /// Runs `body` with one store per prefix, all on one fresh bucket, over an HTTP client made by
    /// `AsyncHTTPClientTransport.makeHTTPClient`; shuts the client down afterwards.
    static func withStores(
        prefixes: [String] = ["run"], endpoint: String? = nil, credentials: S3Credentials? = nil,
        retryPolicy: S3RetryPolicy = S3RetryPolicy(), createBucket: Bool = true,
        readTimeout: Duration = AsyncHTTPClientTransport.defaultReadTimeout,
        _ body: ([S3ChunkBlobStore], RecordingTransport) async throws -> Void
    ) async throws {
        let server = try Server.fromEnvironment()
        let http = AsyncHTTPClientTransport.makeHTTPClient(readTimeout: readTimeout)
        do {
            let bucket = "syncfs-blobs-\(UUID().uuidString.prefix(8).lowercased())"
            let transport = RecordingTransport(AsyncHTTPClientTransport(client: http))
            let stores = try prefixes.map { prefix in
                let location = try S3Location(
                    parsing: "s3://\(bucket)/\(prefix)?endpoint=\(endpoint ?? server.endpoint)&region=\(server.region)")
                return S3ChunkBlobStore(
                    client: S3ChunkBlobStore.client(
                        location: location, credentials: credentials ?? server.credentials, transport: transport,
                        retryPolicy: retryPolicy, requestTimeout: .seconds(20)))
            }
            if createBucket { try await stores[0].client.createBucket() }
            transport.reset()
            try await body(stores, transport)
            if createBucket {
                try await emptyBucket(stores)
                try await stores[0].client.deleteBucket()
            }
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// Deletes every object under the stores' prefixes (RGW's memstore keeps them in memory).
    static func emptyBucket(_ stores: [S3ChunkBlobStore]) async throws {
        for store in stores {
            var token: String?
            repeat {
                let page = try await store.client.list(continuationToken: token)
                for object in page.objects { try await store.client.delete(object.key) }
                token = page.continuationToken
            } while token != nil
        }
    }

    /// Bytes from a seeded generator: `compressible` ones repeat a short pattern.
    static func bytes(_ count: Int, seed: UInt64, compressible: Bool = false) -> [UInt8] {
        guard compressible else { return SeededGenerator.bytes(count: count, seed: seed) }
        return (0..<count).map { index in UInt8(truncatingIfNeeded: (index / 7) % 13 + Int(seed)) }
    }

    static func encode(_ bytes: [UInt8]) -> EncodedChunk { bytes.withUnsafeBytes { ChunkCodec.encode($0) } }

    @Test func realChunksRoundTrip() async throws {
        try await Self.withStores { stores, _ in
            let store = stores[0]
            let plains: [[UInt8]] = [
                [], [42], Self.bytes(100_000, seed: 1, compressible: true), Self.bytes(100_000, seed: 2),
                Self.bytes(4 << 20, seed: 3), Self.bytes(4 << 20, seed: 4, compressible: true),
            ]
            for plain in plains {
                let chunk = Self.encode(plain)
                try await store.put(chunk)
                let read = try await store.get(chunk.hash)
                #expect(read == chunk, "\(plain.count) bytes")
                #expect(try ChunkCodec.decode(read) == plain)
                // The object is the local chunk file's bytes, at the documented key.
                let object = try await store.client.get(S3ChunkBlobStore.key(chunk.hash))
                #expect(Array(object) == LocalChunkFile.encode(chunk))
            }
            #expect(Self.encode([]).encoding == .raw && Self.encode([]).payload.isEmpty)
            #expect(Self.encode(Self.bytes(4 << 20, seed: 4, compressible: true)).encoding == .zlib)
        }
    }

    /// A sealed chunk (a client's ciphertext, named by a MAC the store cannot check) is stored and
    /// read back byte for byte; an object of it whose payload is not its plain length is corrupt.
    @Test func sealedChunksRoundTripAndAreCheckedForTheirLength() async throws {
        try await Self.withStores { stores, _ in
            let store = stores[0]
            let payload = Self.bytes(150_000, seed: 21)
            let sealed = EncodedChunk(
                hash: ChunkHash(bytes: Self.bytes(32, seed: 22))!, encoding: .sealed, plainLength: payload.count,
                payload: payload)
            try await store.put(sealed)
            #expect(try await store.get(sealed.hash) == sealed)
            let object = try await store.client.get(S3ChunkBlobStore.key(sealed.hash))
            #expect(Array(object) == LocalChunkFile.encode(sealed) && object[5] == 2)

            var cut = LocalChunkFile.encode(sealed)
            cut.removeLast()
            try await store.client.put(S3ChunkBlobStore.key(sealed.hash), data: Data(cut))
            await #expect(throws: ContainerProtocolError.corruptChunk(sealed.hash)) { try await store.get(sealed.hash) }
        }
    }

    /// A second put of a stored chunk succeeds without writing: RGW answers the conditional PUT
    /// with 412 and the HEAD finds the object's size right.
    @Test func putTwiceKeepsTheObject() async throws {
        try await Self.withStores { stores, transport in
            let chunk = Self.encode(Self.bytes(300_000, seed: 5))
            try await stores[0].put(chunk)
            #expect(transport.entries == ["PUT 200"])
            transport.reset()
            try await stores[0].put(chunk)
            #expect(transport.entries == ["PUT 412", "HEAD 200"])
            #expect(try await stores[0].get(chunk.hash) == chunk)
        }
    }

    /// Several writers of one chunk at once (two servers deduplicating the same upload) all
    /// succeed, only one of them writes, and the chunk reads back whole.
    @Test func concurrentPutsOfOneChunkAllSucceed() async throws {
        try await Self.withStores { stores, transport in
            let chunk = Self.encode(Self.bytes(2 << 20, seed: 10))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { try await stores[0].put(chunk) } }
                try await group.waitForAll()
            }
            #expect(try await stores[0].get(chunk.hash) == chunk)
            // RGW lets exactly one conditional PUT write; the others get 412 and a matching HEAD.
            #expect(transport.entries.filter { $0.hasPrefix("PUT 2") }.count == 1, "\(transport.entries)")
            #expect(transport.entries.filter { $0 == "PUT 412" || $0 == "PUT 409" }.count == 7)
        }
    }

    @Test func missingAndDeletedChunksAreNotFound() async throws {
        try await Self.withStores { stores, _ in
            let store = stores[0]
            let chunk = Self.encode(Self.bytes(1000, seed: 6))
            await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) { try await store.get(chunk.hash) }
            try await store.delete(chunk.hash)  // deleting what was never stored succeeds
            try await store.put(chunk)
            try await store.delete(chunk.hash)
            await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) { try await store.get(chunk.hash) }
            try await store.delete(chunk.hash)  // and again
        }
    }

    /// Objects written straight into the bucket that are not the chunk of their key are never
    /// served: garbage, a damaged header, a truncated or altered payload, another chunk's object.
    @Test func damagedOrForeignObjectsAreCorrupt() async throws {
        try await Self.withStores { stores, transport in
            let store = stores[0]
            let chunk = Self.encode(Self.bytes(200_000, seed: 7, compressible: true))
            let other = Self.encode(Self.bytes(200_000, seed: 8, compressible: true))
            let good = LocalChunkFile.encode(chunk)
            #expect(chunk.encoding == .zlib)
            var altered = good
            altered[good.count / 2] ^= 0xFF
            var badHeader = good
            badHeader[0] = UInt8(ascii: "X")
            var longer = good
            longer[8] &+= 1  // declares one more plain byte
            let bodies: [(String, [UInt8])] = [
                ("garbage", Array("<html>not a chunk</html>".utf8)), ("empty", []), ("bad magic", badHeader),
                ("truncated", Array(good.prefix(good.count - 10))), ("altered payload", altered),
                ("wrong length", longer), ("another chunk", LocalChunkFile.encode(other)),
            ]
            for (name, body) in bodies {
                try await store.client.put(S3ChunkBlobStore.key(chunk.hash), data: Data(body))
                await #expect(throws: ContainerProtocolError.corruptChunk(chunk.hash), "\(name)") {
                    try await store.get(chunk.hash)
                }
            }
            // An object larger than any chunk is not read whole, and is corrupt.
            let big = S3Client(
                location: store.client.location, credentials: try Server.fromEnvironment().credentials,
                transport: transport, maxObjectSize: 32 << 20)
            try await big.put(
                S3ChunkBlobStore.key(chunk.hash), data: Data(count: S3ChunkBlobStore.maxObjectBytes + 8192))
            await #expect(throws: ContainerProtocolError.corruptChunk(chunk.hash), "oversized") {
                try await store.get(chunk.hash)
            }
            // A put of the real chunk replaces an object of another size, or of this size with
            // other bytes (its ETag, the MD5 of the body, differs).
            for damaged in [Array(good.prefix(100)), altered] {
                try await store.client.put(S3ChunkBlobStore.key(chunk.hash), data: Data(damaged))
                try await store.put(chunk)
                #expect(try await store.get(chunk.hash) == chunk)
            }
        }
    }

    @Test func prefixesKeepStoresApart() async throws {
        try await Self.withStores(prefixes: ["team/a", "team/b", ""]) { stores, _ in
            let (a, b) = (stores[0], stores[1])
            let chunk = Self.encode(Self.bytes(5000, seed: 9))
            try await a.put(chunk)
            await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) { try await b.get(chunk.hash) }
            try await b.put(chunk)
            try await a.delete(chunk.hash)
            #expect(try await b.get(chunk.hash) == chunk)
            await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) { try await a.get(chunk.hash) }
            let keys = try await stores[2].client.list().objects.map(\.key)
            #expect(keys == ["team/b/" + S3ChunkBlobStore.key(chunk.hash)])
        }
    }

    /// A port nothing listens on: with the default retry policy (5 attempts, backoff from 100 ms)
    /// the store answers `unavailable` in about the sum of the backoffs (≤ 1.5 s); 10 s is the
    /// documented bound, generous for a loaded machine.
    @Test func aClosedPortIsUnavailableWithinSeconds() async throws {
        let port = try Self.closedPort()
        try await Self.withStores(endpoint: "http://127.0.0.1:\(port)", createBucket: false) { stores, transport in
            let chunk = Self.encode([1, 2, 3])
            for operation in ["get", "put"] {
                transport.reset()
                let started = ContinuousClock.now
                do {
                    if operation == "get" {
                        _ = try await stores[0].get(chunk.hash)
                    } else {
                        try await stores[0].put(chunk)
                    }
                    Issue.record("a closed port answered")
                } catch {
                    guard case .unavailable? = error as? ContainerProtocolError else {
                        Issue.record("a closed port is \(error), not unavailable")
                        continue
                    }
                }
                let elapsed = ContinuousClock.now - started
                print("closed port: \(operation) unavailable after \(elapsed) (\(transport.entries.count) attempts)")
                #expect(elapsed < .seconds(10))
                #expect(transport.entries.count == 5)
            }
        }
    }

    /// An endpoint that accepts connections and never answers (a hung server): each attempt ends
    /// after the read timeout (1 s here), not the request's 20 s deadline, so two attempts are
    /// `unavailable` in about 2 s; 10 s is the bound.
    @Test func aSilentServerIsUnavailableAfterTheReadTimeout() async throws {
        let (fd, port) = try Self.listeningPort()
        defer { close(fd) }
        try await Self.withStores(
            endpoint: "http://127.0.0.1:\(port)", retryPolicy: S3RetryPolicy(maxAttempts: 2), createBucket: false,
            readTimeout: .seconds(1)
        ) { stores, transport in
            let started = ContinuousClock.now
            do {
                _ = try await stores[0].get(Self.encode([1]).hash)
                Issue.record("a silent server answered")
            } catch {
                guard case .unavailable? = error as? ContainerProtocolError else {
                    Issue.record("a silent server is \(error), not unavailable")
                    return
                }
            }
            let elapsed = ContinuousClock.now - started
            print("silent server: get unavailable after \(elapsed) (\(transport.entries.count) attempts)")
            #expect(elapsed < .seconds(10))
            #expect(transport.entries == ["GET failed", "GET failed"])
        }
    }

    /// A wrong secret: one request (not retried), `storageFailure` naming the 403 and S3's code,
    /// without the secret or the access key's secret part anywhere in the error.
    @Test func aWrongSecretIsAClearRefusal() async throws {
        let server = try Server.fromEnvironment()
        let wrongSecret = "wrong-secret-\(UUID().uuidString)"
        let wrong = S3Credentials(accessKeyID: server.credentials.accessKeyID, secretAccessKey: wrongSecret)
        try await Self.withStores(credentials: wrong, createBucket: false) { stores, transport in
            let chunk = Self.encode([7])
            for operation in ["get", "put", "delete"] {
                transport.reset()
                do {
                    switch operation {
                    case "get": _ = try await stores[0].get(chunk.hash)
                    case "put": try await stores[0].put(chunk)
                    default: try await stores[0].delete(chunk.hash)
                    }
                    Issue.record("\(operation) with a wrong secret succeeded")
                } catch {
                    guard case .storageFailure(let reason)? = error as? ContainerProtocolError else {
                        Issue.record("\(operation) with a wrong secret is \(error)")
                        continue
                    }
                    #expect(reason.contains("403") && reason.contains("credentials"), "\(reason)")
                    let text = "\(error) \(String(reflecting: error))"
                    #expect(!text.contains(wrongSecret) && !text.contains(server.credentials.secretAccessKey))
                }
                #expect(transport.entries == ["\(operation == "get" ? "GET" : operation.uppercased()) 403"])
            }
        }
    }

    /// Put and get throughput and latency on loopback RGW, printed for doc/performance-log.md; asserts
    /// only that every chunk round-trips.
    @Test func throughputAndLatency() async throws {
        try await Self.withStores { stores, _ in
            let store = stores[0]
            let big = (0..<16).map { Self.encode(Self.bytes(4 << 20, seed: 100 + UInt64($0))) }
            let small = (0..<100).map { Self.encode(Self.bytes(4096, seed: 1000 + UInt64($0))) }
            let clock = ContinuousClock()
            var started = clock.now
            for chunk in big { try await store.put(chunk) }
            let putBig = clock.now - started
            started = clock.now
            for chunk in big { #expect(try await store.get(chunk.hash) == chunk) }
            let getBig = clock.now - started
            started = clock.now
            for chunk in small { try await store.put(chunk) }
            let putSmall = clock.now - started
            started = clock.now
            for chunk in small { #expect(try await store.get(chunk.hash) == chunk) }
            let getSmall = clock.now - started
            started = clock.now
            for chunk in small { _ = try await store.client.head(S3ChunkBlobStore.key(chunk.hash)) }
            let headSmall = clock.now - started
            func seconds(_ duration: Duration) -> Double {
                Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            }
            let megabytes = Double(big.count * (4 << 20)) / 1_048_576
            print(
                String(
                    format: "S3ChunkBlobStore on RGW: put %.1f MB/s, get %.1f MB/s (16 x 4 MiB, sequential); "
                        + "4 KiB chunk: put %.1f ms, get %.1f ms, HEAD %.1f ms each",
                    megabytes / seconds(putBig), megabytes / seconds(getBig), seconds(putSmall) * 10,
                    seconds(getSmall) * 10, seconds(headSmall) * 10))
        }
    }

    /// A loopback port nothing listens on: bound, then closed.
    static func closedPort() throws -> Int {
        let (fd, port) = try boundSocket()
        close(fd)
        return port
    }

    /// A loopback socket that listens and never accepts: the kernel completes connections, no
    /// byte is ever answered. The caller closes it.
    static func listeningPort() throws -> (Int32, Int) {
        let (fd, port) = try boundSocket()
        guard listen(fd, 16) == 0 else {
            close(fd)
            throw S3IntegrationTests.MissingService("listen failed")
        }
        return (fd, port)
    }

    /// A TCP socket bound to 127.0.0.1 on a free port, and the port.
    static func boundSocket() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw S3IntegrationTests.MissingService("cannot bind a loopback socket")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
