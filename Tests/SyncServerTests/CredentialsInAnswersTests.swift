import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SyncBackend
import SyncPostgres
import SyncPostgresTesting
import SyncS3
import SyncServer
import SyncServerPostgres
import SyncServerTesting
import Synchronization
import TestSupport
import Testing

/// A server on PostgreSQL + S3 whose backend fails while it serves — the object store refuses its
/// keys, the database goes away — answers `503` and logs the failure, but neither the answers nor
/// its log (at `trace`) ever hold the database password (from `PGPASSWORD`) or the S3 keys.
@Suite struct CredentialsInAnswersTests {
    @Test func backendFailuresNeverShowTheCredentials() async throws {
        let tag = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let pgPassword = "pg-secret-\(tag)"
        let keyID = "AKID\(tag.uppercased())"
        let secretKey = "s3-secret-\(tag)"
        // Fails, naming `scripts/services.sh start`, without the services.
        _ = try ServicesEnvironment.require(.postgres, .s3)
        let root = try TemporaryDirectory()
        defer { root.remove() }

        let scratch = try await PostgresScratchDatabase.create()
        // The test cluster trusts local connections: the password is carried but never needed.
        var environment = ProcessInfo.processInfo.environment
        environment["PGPASSWORD"] = pgPassword
        let settings = try PostgresSettings(url: scratch.url, environment: environment)
        try await PostgresStore.initialize(settings: settings)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        // A bucket that exists, keys RGW does not know: every chunk write is refused.
        let good = try await SharedTestBucket.blobs()
        let location = good.client.location
        let blobs = S3ChunkBlobStore(
            client: S3ChunkBlobStore.client(
                location: location, credentials: S3Credentials(accessKeyID: keyID, secretAccessKey: secretKey),
                transport: AsyncHTTPClientTransport(client: http)))
        let log = CapturedLog()
        var logger = Logger(label: "credentials-test") { _ in log }
        logger.logLevel = .trace
        // The store's own log (postgres-nio's, at trace) is read back too; a short deadline.
        var options = PostgresStore.Options()
        options.logger = logger
        options.operationTimeout = .seconds(3)
        let store = try await PostgresStore.open(settings: settings, blobs: blobs, options: options)
        _ = try await store.createContainer(named: "box")
        let token = TokenFormat.newToken()
        _ = try await PostgresTokens(store: store).insert(
            id: TokenFormat.newID(), digest: TokenFormat.digest(of: token), container: "box", label: "",
            created: 0)
        let server = try await SyncTestServer.start(
            root: root.path, containers: PostgresContainerSource(store: store),
            tokenAuthority: AccessControl(store: PostgresAccess(store: store)), logger: logger)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var replies: [Reply] = []
        do {
            func send(_ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil)
                async throws -> Reply
            {
                var request = HTTPClientRequest(url: server.baseURL + WireProtocol.Path.container("box") + path)
                request.method = method
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                for (name, value) in headers { request.headers.add(name: name, value: value) }
                if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
                return try await ServerFixture.execute(client, request, timeout: .seconds(60))
            }
            let chunk = Sample.chunk(Sample.bytes(5000, seed: 3))
            let refused = try await send(
                .PUT, "/chunks/\(chunk.hash.hex)",
                headers: [
                    (WireProtocol.chunkEncodingHeader, WireProtocol.encodingName(chunk.encoding)),
                    (WireProtocol.plainLengthHeader, String(chunk.plainLength)),
                ], body: chunk.payload)
            #expect(refused.status >= 500, "\(refused.status) \(refused.text)")
            replies.append(refused)
            // The database goes away under the server.
            try await scratch.drop()
            let commit = try await send(
                .POST, "/commits", headers: [("Content-Type", "application/json")],
                body: Array(try JSONEncoder().encode(Sample.create(Sample.directory("d")))))
            #expect(commit.status == 503, "\(commit.status) \(commit.text)")
            // Said once, plainly: not "cannot be read: … cannot be read: container unavailable: …".
            #expect(
                commit.wireError?.message.hasPrefix("the token database cannot be read: PostgreSQL") == true,
                "\(commit.text)")
            replies.append(commit)
            let info = try await send(.GET, "")
            #expect(info.status == 503, "\(info.status) \(info.text)")
            replies.append(info)
        } catch {
            Issue.record("\(error)")
        }
        try? await client.shutdown()
        await server.stop()
        await store.shutdown()
        try? await http.shutdown()
        try? await scratch.drop()

        let lines = log.lines
        #expect(!lines.isEmpty, "the server logged nothing at trace")
        print(
            "answers: \(replies.map { "\($0.status) \($0.text)" }); \(lines.count) log lines, the last: "
                + (lines.last ?? "-"))
        for (name, secret) in [("PGPASSWORD", pgPassword), ("the access key ID", keyID), ("the secret key", secretKey)]
        {
            for reply in replies { #expect(!reply.text.contains(secret), "\(name) in an answer: \(reply.text)") }
            for line in lines where line.contains(secret) { Issue.record("\(name) in the log: \(line)") }
        }
    }
}

/// A log handler keeping every line (level, message, metadata) for the test to read back.
final class CapturedLog: LogHandler, @unchecked Sendable {
    private let stored = Mutex<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    var lines: [String] { stored.withLock { $0 } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = "\(event.level) \(event.message) \(metadata.merging(event.metadata ?? [:]) { $1 })"
        stored.withLock { $0.append(line) }
    }
}
