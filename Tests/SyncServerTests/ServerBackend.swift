import AsyncHTTPClient
import Foundation
import PostgresNIO
import SyncBackend
import SyncPostgres
import SyncPostgresTesting
import SyncS3
import SyncServerPostgres
import SyncServerTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncServer

/// Which backend a `ServerFixture`'s in-process server serves: the embedded default (containers
/// in directories under a root, tokens in its token database) or PostgreSQL + S3 (containers and
/// tokens in a scratch database of the services' PostgreSQL, chunks under a prefix of its own in
/// one RGW bucket per test process), as `serve --database … --chunk-store s3://…` does.
/// The input checks run on both: every check of the HTTP server must hold on either.
enum ServerBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case embedded
    case postgresS3

    var testDescription: String { rawValue }
}

/// The containers and tokens behind a fixture's server, made and inspected as the backend's own
/// tools would (`token create`, `token revoke`, opening the store beside the server).
final class FixtureBackend: Sendable {
    let kind: ServerBackend
    /// The embedded root (a temporary directory; for `postgresS3` it is empty and unused).
    let root: TemporaryDirectory
    private let database: (store: PostgresStore, scratch: PostgresScratchDatabase)?

    private init(
        kind: ServerBackend, root: TemporaryDirectory,
        database: (store: PostgresStore, scratch: PostgresScratchDatabase)?
    ) {
        self.kind = kind
        self.root = root
        self.database = database
    }

    /// A fresh backend: a new root, and for `postgresS3` a new scratch database (schema made)
    /// with chunks under a fresh prefix of the process's bucket.
    static func make(_ kind: ServerBackend) async throws -> FixtureBackend {
        let root = try TemporaryDirectory()
        guard kind == .postgresS3 else { return FixtureBackend(kind: kind, root: root, database: nil) }
        do {
            let scratch = try await PostgresScratchDatabase.create()
            let settings = try PostgresSettings(url: scratch.url)
            try await PostgresStore.initialize(settings: settings)
            let store = try await PostgresStore.open(settings: settings, blobs: try await SharedTestBucket.blobs())
            return FixtureBackend(kind: kind, root: root, database: (store, scratch))
        } catch {
            root.remove()
            throw error
        }
    }

    /// Starts a server on this backend.
    func startServer(
        tls: TLSFiles? = nil, maxConcurrentChunkUploads: Int, limits: ServerLimits?,
        quotas: QuotaSettings = QuotaSettings(), servesBatches: Bool = true
    ) async throws -> SyncTestServer {
        try await SyncTestServer.start(
            root: root.path, tls: tls, maxConcurrentChunkUploads: maxConcurrentChunkUploads, limits: limits,
            containers: database.map { PostgresContainerSource(store: $0.store) },
            tokenAuthority: database.map { AccessControl(store: PostgresAccess(store: $0.store)) }, quotas: quotas,
            servesBatches: servesBatches)
    }

    /// Makes the container `name` (if missing) and a token for it, as `token create` does.
    func makeContainer(_ name: String, on server: SyncTestServer) async throws -> String {
        guard let database else { return try server.makeContainer(name) }
        if try await database.store.container(named: name) == nil {
            _ = try await database.store.createContainer(named: name)
        }
        return try await createToken(container: name, label: "test", on: server).token
    }

    /// A new token for `container`, whether or not the container exists.
    func createToken(container: String, label: String, on server: SyncTestServer) async throws -> (
        id: String, token: String
    ) {
        guard let database else {
            let tokens = try #require(server.tokens)
            return try tokens.create(container: container, label: label)
        }
        let token = TokenFormat.newToken()
        let id = TokenFormat.newID()
        let inserted = try await PostgresTokens(store: database.store).insert(
            id: id, digest: TokenFormat.digest(of: token), container: container, label: label,
            created: Int64(Date().timeIntervalSince1970))
        guard inserted else { throw TestFailure("token ID \(id) taken") }
        return (id, token)
    }

    /// Revokes token `id`: true if revoked now, false if it was already; throws for an unknown ID.
    func revoke(id: String, on server: SyncTestServer) async throws -> Bool {
        guard let database else { return try #require(server.tokens).revoke(id: id) }
        guard
            let revoked = try await PostgresTokens(store: database.store).revoke(
                id: id, at: Int64(Date().timeIntervalSince1970))
        else { throw TestFailure("no token \(id)") }
        return revoked
    }

    /// Token `id`'s label and whether it is revoked, if it exists.
    func token(id: String, on server: SyncTestServer) async throws -> (label: String, revoked: Bool)? {
        guard let database else {
            return try #require(server.tokens).list().first { $0.id == id }.map { ($0.label, $0.revoked != nil) }
        }
        return try await PostgresTokens(store: database.store).list().first { $0.id == id }.map {
            ($0.label, $0.revoked != nil)
        }
    }

    /// The server's access store (accounts, memberships, tokens, audit), as `user`/`member`/
    /// `token` commands reach it.
    func accessStore(on server: SyncTestServer) throws -> any AccessStore {
        guard let database else { return EmbeddedAccessStore(store: try #require(server.tokens)) }
        return PostgresAccess(store: database.store)
    }

    /// Where the server's containers come from, as `serve` makes it (the root's, or the
    /// database's), with its catalog (`ContainerCatalog`, for the collection schedule).
    func source() -> any ContainerSource & ContainerCatalog {
        guard let database else { return LocalContainerSource(registry: ContainerRegistry(root: root.path)) }
        return PostgresContainerSource(store: database.store)
    }

    /// The container `name`, opened beside the server (as another process would).
    func container(_ name: String) async throws -> any Container {
        guard let database else { return try LocalContainer.openOrCreate(at: root.path + "/" + name) }
        return try #require(try await database.store.container(named: name), "no container \(name)")
    }

    /// As an administrator restoring a backup: the container `name` is set aside as `aside` (its
    /// directory moved, or its row renamed) and a new, empty one is made under `name`; returns it.
    func replace(_ name: String, aside: String) async throws -> any Container {
        guard let database else {
            try FileManager.default.moveItem(atPath: root.path + "/" + name, toPath: root.path + "/" + aside)
            return try LocalContainer.openOrCreate(at: root.path + "/" + name)
        }
        try await PostgresScratchDatabase.withAdmin(database.scratch.url) { client in
            _ = try await client.query("UPDATE syncfs_containers SET name = \(aside) WHERE name = \(name)")
        }
        return try await database.store.createContainer(named: name)
    }

    /// Everything the backend holds that a request could have created: the root's entries, and
    /// for `postgresS3` the containers' names.
    func inventory() async throws -> [String] {
        let files = try FileManager.default.contentsOfDirectory(atPath: root.path).sorted()
        guard let database else { return files }
        let names = try await PostgresScratchDatabase.withAdmin(database.scratch.url) { client in
            var names: [String] = []
            for try await name in try await client.query("SELECT name FROM syncfs_containers ORDER BY name")
                .decode(String.self)
            {
                names.append(name)
            }
            return names
        }
        return (files + names.map { "container:" + $0 }).sorted()
    }

    /// Shuts the store down, drops the database, removes the root.
    func close() async {
        if let database {
            await database.store.shutdown()
            try? await database.scratch.drop()
        }
        root.remove()
    }
}

/// One RGW bucket for this test process's PostgreSQL + S3 fixtures, made on first use; each
/// fixture stores its chunks under a fresh prefix of it. Its HTTP client lives as long as the
/// process (never shut down, so never deinitialized while in use).
enum SharedTestBucket {
    private static let made = Mutex<
        Task<(bucket: String, services: ServicesEnvironment, client: HTTPClient), any Error>?
    >(nil)

    /// A blob store under a fresh prefix of the bucket.
    static func blobs() async throws -> S3ChunkBlobStore {
        let task = made.withLock { task in
            if let task { return task }
            let made = Task<(bucket: String, services: ServicesEnvironment, client: HTTPClient), any Error> {
                let services = try ServicesEnvironment.require(.postgres, .s3)
                let credentials = S3Credentials(
                    accessKeyID: services.s3AccessKeyID, secretAccessKey: services.s3SecretAccessKey)
                let client = AsyncHTTPClientTransport.makeHTTPClient()
                let bucket = "syncfs-server-\(UUID().uuidString.prefix(8).lowercased())"
                let location = try S3Location(
                    parsing: "s3://\(bucket)?endpoint=\(services.s3Endpoint)&region=\(services.s3Region)")
                try await S3ChunkBlobStore.client(
                    location: location, credentials: credentials, transport: AsyncHTTPClientTransport(client: client)
                ).createBucket()
                return (bucket, services, client)
            }
            task = made
            return made
        }
        let (bucket, services, client) = try await task.value
        let prefix = "f" + UUID().uuidString.prefix(8).lowercased()
        let location = try S3Location(
            parsing: "s3://\(bucket)/\(prefix)?endpoint=\(services.s3Endpoint)&region=\(services.s3Region)")
        return S3ChunkBlobStore(
            client: S3ChunkBlobStore.client(
                location: location,
                credentials: S3Credentials(
                    accessKeyID: services.s3AccessKeyID, secretAccessKey: services.s3SecretAccessKey),
                transport: AsyncHTTPClientTransport(client: client)))
    }
}
