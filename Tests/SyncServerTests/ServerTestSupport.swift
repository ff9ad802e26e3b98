import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncBackend
import SyncServer
import SyncServerTesting
import Testing

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One answer, read whole.
struct Reply: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The protocol's error body, or nil if the body is not one.
    var wireError: WireError? { try? JSONDecoder().decode(WireError.self, from: Data(body)) }

    /// The error code, if the body is a protocol error.
    var code: WireError.Code? { wireError.flatMap { WireError.Code(rawValue: $0.error) } }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: Data(body)) }
}

/// A running in-process server with one container (`name`) and its token, plus a raw HTTP client,
/// on a backend of its own (`ServerBackend`: the embedded default unless `backend` says otherwise).
/// `run` always stops both and removes the backend, whatever the body does.
struct ServerFixture: Sendable {
    let server: SyncTestServer
    let client: HTTPClient
    let name: String
    let token: String
    let backend: FixtureBackend

    static func run(
        backend kind: ServerBackend = .embedded, container name: String = "box", tls: TLSFiles? = nil,
        client configuration: HTTPClient.Configuration = .init(),
        maxConcurrentChunkUploads: Int = SyncServer.defaultChunkUploads, limits: ServerLimits? = nil,
        quotas: QuotaSettings = QuotaSettings(), servesBatches: Bool = true,
        _ body: (ServerFixture) async throws -> Void
    ) async throws {
        let backend = try await FixtureBackend.make(kind)
        let server: SyncTestServer
        do {
            server = try await backend.startServer(
                tls: tls, maxConcurrentChunkUploads: maxConcurrentChunkUploads, limits: limits, quotas: quotas,
                servesBatches: servesBatches)
        } catch {
            await backend.close()
            throw error
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var failure: (any Error)?
        do {
            let token = try await backend.makeContainer(name, on: server)
            try await body(ServerFixture(server: server, client: client, name: name, token: token, backend: backend))
        } catch {
            failure = error
        }
        try? await client.shutdown()
        await server.stop()
        await backend.close()
        if let failure { throw failure }
    }

    /// The fixture's container, opened beside the server (as another process would).
    func container() async throws -> any Container { try await backend.container(name) }

    /// Makes the container `other` (if missing) and returns a new token for it.
    func makeContainer(_ other: String) async throws -> String { try await backend.makeContainer(other, on: server) }

    /// A new token for `container` (which need not exist).
    func createToken(container: String, label: String) async throws -> (id: String, token: String) {
        try await backend.createToken(container: container, label: label, on: server)
    }

    /// `/v1/containers/NAME` + `suffix`.
    func path(_ suffix: String = "") -> String { WireProtocol.Path.container(name) + suffix }

    /// How a request authenticates.
    enum Auth: Sendable {
        /// `Bearer` with the fixture's token.
        case fixture
        /// No `Authorization` header.
        case none
        /// `Bearer` with this token.
        case token(String)
        /// This whole `Authorization` header.
        case header(String)
    }

    /// Sends a request, with the fixture's token unless `auth` says otherwise.
    func send(
        _ method: HTTPMethod, _ path: String, auth: Auth = .fixture, headers: [(String, String)] = [],
        body: [UInt8]? = nil, timeout: TimeAmount = .seconds(60)
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: server.baseURL + path)
        request.method = method
        switch auth {
        case .fixture: request.headers.add(name: "Authorization", value: "Bearer \(token)")
        case .none: break
        case .token(let other): request.headers.add(name: "Authorization", value: "Bearer \(other)")
        case .header(let value): request.headers.add(name: "Authorization", value: value)
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        return try await Self.execute(client, request, timeout: timeout)
    }

    /// `send` with a JSON body.
    func send(_ method: HTTPMethod, _ path: String, json: some Encodable, auth: Auth = .fixture) async throws -> Reply {
        try await send(
            method, path, auth: auth, headers: [("Content-Type", "application/json")],
            body: Array(try JSONEncoder().encode(json)))
    }

    /// `PUT .../chunks/HASH` of an encoded chunk, with the right headers.
    func put(_ chunk: EncodedChunk, hash: ChunkHash? = nil) async throws -> Reply {
        try await send(
            .PUT, path("/chunks/\((hash ?? chunk.hash).hex)"),
            headers: [
                (WireProtocol.chunkEncodingHeader, WireProtocol.encodingName(chunk.encoding)),
                (WireProtocol.plainLengthHeader, String(chunk.plainLength)),
            ], body: chunk.payload)
    }

    /// `PUT .../chunks/HASH` of `chunk` with a body streamed by the caller: feed the payload to
    /// the continuation (and finish it), then await the task.
    func streamingPut(_ chunk: EncodedChunk, length: Bool = true) -> (
        reply: Task<Reply, any Error>, body: AsyncStream<ByteBuffer>.Continuation
    ) {
        let (stream, feed) = AsyncStream<ByteBuffer>.makeStream()
        var request = HTTPClientRequest(url: server.baseURL + path("/chunks/\(chunk.hash.hex)"))
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: WireProtocol.chunkEncodingHeader, value: WireProtocol.encodingName(chunk.encoding))
        request.headers.add(name: WireProtocol.plainLengthHeader, value: String(chunk.plainLength))
        request.body = .stream(stream, length: length ? .known(Int64(chunk.payload.count)) : .unknown)
        let reply = Task { [client] in try await Self.execute(client, request, timeout: .seconds(60)) }
        return (reply, feed)
    }

    /// Whether a TCP connection to the server's port is accepted now (closed at once).
    func acceptsConnections() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(server.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected == 0
    }

    /// `POST .../commits`.
    func commit(_ request: CommitRequest) async throws -> Reply {
        try await send(.POST, path("/commits"), json: request)
    }

    static func execute(_ client: HTTPClient, _ request: HTTPClientRequest, timeout: TimeAmount) async throws -> Reply {
        let response = try await client.execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 64 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Array(body.readableBytesView))
    }
}

/// Sample data.
enum Sample {
    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 17 &+ ($0 >> 8)) }
    }

    static func chunk(_ bytes: [UInt8]) -> EncodedChunk { bytes.withUnsafeBytes { ChunkCodec.encode($0) } }

    static func directory(_ name: String, parent: FileID = .root) -> EntryState {
        EntryState(parent: parent, name: Array(name.utf8), kind: .directory, mode: 0o755, mtime: 1, size: 0)
    }

    static func file(_ name: String, parent: FileID = .root, chunks: [EncodedChunk] = [], mtime: Int64 = 1)
        -> EntryState
    {
        EntryState(
            parent: parent, name: Array(name.utf8), kind: .file, mode: 0o644, mtime: mtime,
            size: chunks.reduce(0) { $0 + Int64($1.plainLength) },
            manifest: chunks.map { ChunkRef(hash: $0.hash, length: Int64($0.plainLength)) })
    }

    static func create(_ state: EntryState, id: FileID = .random(), device: String = "test-device") -> CommitRequest {
        CommitRequest(id: id, baseVersion: 0, change: .put(state), device: device)
    }
}

/// Awaits `body` on a container, failing the test on a container error.
func onDisk<T>(_ body: () async throws(ContainerProtocolError) -> T) async throws -> T {
    do {
        return try await body()
    } catch {
        throw TestFailure("container call failed: \(error)")
    }
}
