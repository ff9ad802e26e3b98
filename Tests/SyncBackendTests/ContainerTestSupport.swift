import AsyncHTTPClient
import Crypto
import Foundation
import SyncClient
import SyncPostgres
import SyncPostgresTesting
import SyncS3
import SyncSealed
import SyncServer
import SyncServerPostgres
import SyncServerTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncBackend

/// The container implementations every conformance test runs against.
enum ContainerKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory
    case local
    /// `HTTPContainer` through a real `SyncServer` on loopback (one server per test process,
    /// a fresh container and token per fixture).
    case http
    /// `PostgresContainer` on the PostgreSQL of `scripts/services.sh` with chunk bytes in a
    /// local directory (one database and store per test process, a fresh container per fixture).
    /// Fails, saying so, without `SYNCFS_TEST_PG_URL`.
    case postgres
    /// The same with chunk bytes in an S3 bucket of Ceph RGW (`scripts/services.sh`): the backend
    /// of `serve --database … --chunk-store s3://…` (one bucket per test process). Fails, saying
    /// so, without `SYNCFS_TEST_PG_URL` and the `SYNCFS_TEST_S3_*` variables.
    case postgresS3
    /// `HTTPContainer` through a real `SyncServer` on loopback whose containers and tokens are
    /// those of the `postgresS3` store (`PostgresContainerSource`, `PostgresTokenAuthority`): the
    /// path of a request to a deployed `serve --database … --chunk-store s3://…` (one server per
    /// test process, a fresh container and token per fixture).
    case httpPostgresS3
    /// A `SealedContainer` (end-to-end encrypted) over an in-memory container, a local one, and
    /// a real `SyncServer` on loopback (the blind server): everything the engine relies on holds
    /// through the wrapper too.
    case sealedInMemory
    case sealedLocal
    case sealedHTTP

    var testDescription: String { rawValue }

    var isSealed: Bool { self == .sealedInMemory || self == .sealedLocal || self == .sealedHTTP }

    /// The versions of the `count` changes of the commit that follows the one that gave
    /// `previous`: the next ones for a plain container; for a sealed one the ledger's (the next
    /// ledger entry's sequence, shifted, plus each change's place in it: `FeedSpot.version`).
    func versions(after previous: EntryVersion, count: Int) -> [EntryVersion] {
        let first = isSealed ? ((previous >> 20) + 1) << 20 : previous + 1
        return (0..<EntryVersion(count)).map { first + $0 }
    }

    /// The version of the next commit's one change after the one that gave `previous`.
    func nextVersion(after previous: EntryVersion) -> EntryVersion { versions(after: previous, count: 1)[0] }

    /// The version of the one change of the commit just before the one that gave `version`.
    func versionBefore(_ version: EntryVersion) -> EntryVersion {
        isSealed ? ((version >> 20) - 1) << 20 : version - 1
    }

    /// The kinds that store what they are given as it is (the side protocols' suites: locks,
    /// sealed chunks), without the sealed wrapper.
    static var plainCases: [ContainerKind] { allCases.filter { !$0.isSealed } }
}

/// A fresh, empty container of one kind; a local one lives in a temporary directory that
/// `remove()` deletes (call it in a `defer`, which also keeps the fixture alive to the end).
final class ContainerFixture: Sendable {
    let container: any Container
    let directory: String?

    private init(container: any Container, directory: String?) {
        self.container = container
        self.directory = directory
    }

    static func make(_ kind: ContainerKind) async throws -> ContainerFixture {
        switch kind {
        case .sealedInMemory, .sealedLocal, .sealedHTTP:
            let base = try await make(kind == .sealedInMemory ? .inMemory : kind == .sealedLocal ? .local : .http)
            let sealed = try await SealedContainer.create(
                in: base.container, as: .generate(), recovery: .generate(), deviceName: "test")
            return ContainerFixture(container: sealed, directory: base.directory)
        case .inMemory:
            return ContainerFixture(container: InMemoryContainer(), directory: nil)
        case .local:
            let directory = try makeTemporaryDirectory()
            return ContainerFixture(
                container: try LocalContainer.openOrCreate(at: directory + "/container"), directory: directory)
        case .http:
            let server = try await SharedTestServer.server()
            let name = "c-" + UUID().uuidString.lowercased()
            let token = try server.makeContainer(name)
            let info = try await HTTPContainer.fetchInfo(
                address: try ServerAddress(parsing: server.url(container: name)), token: token)
            let container = try HTTPContainer(
                address: try ServerAddress(parsing: server.url(container: name)), token: token, containerID: info.id)
            return ContainerFixture(container: container, directory: server.root + "/" + name)
        case .httpPostgresS3:
            let server = try await SharedTestServer.serverOnPostgresS3()
            let name = "c-" + UUID().uuidString.lowercased()
            let store = try await SharedPostgresStore.storeOnS3()
            _ = try await store.createContainer(named: name)
            let token = try await PostgresTestTokens.create(container: name, in: store)
            let address = try ServerAddress(parsing: server.url(container: name))
            let info = try await HTTPContainer.fetchInfo(address: address, token: token)
            return ContainerFixture(
                container: try HTTPContainer(address: address, token: token, containerID: info.id), directory: nil)
        case .postgres, .postgresS3:
            let store = try await kind == .postgres ? SharedPostgresStore.store() : SharedPostgresStore.storeOnS3()
            let container = try await store.createContainer(named: "c-" + UUID().uuidString.lowercased())
            return ContainerFixture(container: container, directory: nil)
        }
    }

    func remove() {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }
}

/// The one sync server of this test process, started on first use and left running until the
/// process ends (stopping it needs an `await`, which a fixture's `defer` cannot do).
enum SharedTestServer {
    private static let started = Mutex<Task<SyncTestServer, any Error>?>(nil)

    static func server() async throws -> SyncTestServer {
        let task = started.withLock { task in
            if let task { return task }
            let made = Task<SyncTestServer, any Error> {
                let root = try makeTemporaryDirectory()
                return try await SyncTestServer.start(root: root)
            }
            task = made
            return made
        }
        return try await task.value
    }

    private static let startedOnPostgresS3 = Mutex<Task<SyncTestServer, any Error>?>(nil)

    /// The one sync server of this test process over the `postgresS3` store (containers and
    /// tokens in PostgreSQL, chunks in RGW), as `serve --database … --chunk-store s3://…` runs.
    static func serverOnPostgresS3() async throws -> SyncTestServer {
        let task = startedOnPostgresS3.withLock { task in
            if let task { return task }
            let made = Task<SyncTestServer, any Error> {
                let store = try await SharedPostgresStore.storeOnS3()
                return try await SyncTestServer.start(
                    root: try makeTemporaryDirectory(), containers: PostgresContainerSource(store: store),
                    tokenAuthority: AccessControl(store: PostgresAccess(store: store)))
            }
            task = made
            return made
        }
        return try await task.value
    }
}

/// Tokens in a PostgreSQL store's table, made as `syncfs-mount token create --database` makes them.
enum PostgresTestTokens {
    /// A new token for `container`.
    static func create(container: String, in store: PostgresStore) async throws -> String {
        let token = TokenFormat.newToken()
        let inserted = try await PostgresTokens(store: store).insert(
            id: TokenFormat.newID(), digest: TokenFormat.digest(of: token), container: container, label: "test",
            created: Int64(Date().timeIntervalSince1970))
        guard inserted else { throw TestSetupFailure("a token ID was taken: draw again") }
        return token
    }
}

/// The one PostgreSQL store of this test process (a scratch database, chunk bytes in a temporary
/// directory, `StorageFailure` installed), made on first use and left open until the process
/// ends, as `SharedTestServer`.
enum SharedPostgresStore {
    private static let opened = Mutex<Task<PostgresStore, any Error>?>(nil)

    static func store() async throws -> PostgresStore {
        let task = opened.withLock { task in
            if let task { return task }
            let made = Task<PostgresStore, any Error> {
                let database = try await PostgresScratchDatabase.create()
                let settings = try PostgresSettings(url: database.url)
                try await PostgresStore.initialize(settings: settings)
                let blobs = try LocalChunkBlobStore.create(at: try makeTemporaryDirectory() + "/blobs")
                let store = try await PostgresStore.open(settings: settings, blobs: blobs)
                try await StorageFailure.install(in: store)
                return store
            }
            task = made
            return made
        }
        return try await task.value
    }
}

extension SharedPostgresStore {
    private static let openedOnS3 = Mutex<Task<PostgresStore, any Error>?>(nil)
    /// The HTTP client of the S3 store: lives as long as the test process (never shut down, so
    /// never deinitialized while running).
    private static let http = Mutex<HTTPClient?>(nil)

    /// A PostgreSQL store (its own scratch database) whose chunks go to a fresh RGW bucket.
    static func storeOnS3() async throws -> PostgresStore {
        let task = openedOnS3.withLock { task in
            if let task { return task }
            let made = Task<PostgresStore, any Error> {
                let services = try ServicesEnvironment.require(.postgres, .s3)
                let client = AsyncHTTPClientTransport.makeHTTPClient()
                http.withLock { $0 = client }
                let bucket = "syncfs-conformance-\(UUID().uuidString.prefix(8).lowercased())"
                let location = try S3Location(
                    parsing: "s3://\(bucket)/run?endpoint=\(services.s3Endpoint)&region=\(services.s3Region)")
                let blobs = S3ChunkBlobStore(
                    client: S3ChunkBlobStore.client(
                        location: location,
                        credentials: S3Credentials(
                            accessKeyID: services.s3AccessKeyID, secretAccessKey: services.s3SecretAccessKey),
                        transport: AsyncHTTPClientTransport(client: client)))
                try await blobs.client.createBucket()
                let database = try await PostgresScratchDatabase.create()
                let settings = try PostgresSettings(url: database.url)
                try await PostgresStore.initialize(settings: settings)
                let store = try await PostgresStore.open(settings: settings, blobs: blobs)
                try await StorageFailure.install(in: store)
                return store
            }
            task = made
            return made
        }
        return try await task.value
    }
}

/// A fixture could not be set up (the test fails, saying why).
struct TestSetupFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A raw (uncompressed) chunk of `bytes`, hashed as a client would.
func rawChunk(_ bytes: [UInt8]) -> EncodedChunk {
    EncodedChunk(hash: sha256(bytes), encoding: .raw, plainLength: bytes.count, payload: bytes)
}

func rawChunk(_ text: String) -> EncodedChunk { rawChunk(Array(text.utf8)) }

func sha256(_ bytes: [UInt8]) -> ChunkHash {
    ChunkHash(bytes: Array(SHA256.hash(data: bytes)))!
}

func directoryState(_ name: String, in parent: FileID = .root, mode: UInt32 = 0o755) -> EntryState {
    EntryState(parent: parent, name: Array(name.utf8), kind: .directory, mode: mode, mtime: 1_000, size: 0)
}

func fileState(_ name: String, in parent: FileID = .root, chunks: [EncodedChunk] = []) -> EntryState {
    EntryState(
        parent: parent, name: Array(name.utf8), kind: .file, mode: 0o644, mtime: 2_000,
        size: chunks.reduce(0) { $0 + Int64($1.plainLength) },
        xattrs: ["user.tag": [1, 2, 3]],
        manifest: chunks.map { ChunkRef(hash: $0.hash, length: Int64($0.plainLength)) })
}

func symlinkState(_ name: String, in parent: FileID = .root, target: String) -> EntryState {
    EntryState(
        parent: parent, name: Array(name.utf8), kind: .symlink, mode: 0o777, mtime: 3_000, size: 0,
        symlinkTarget: Array(target.utf8))
}

/// A failure injected or expected in tests, as a `Comment`-friendly description.
struct UnexpectedOutcome: Error, CustomStringConvertible {
    let outcome: CommitOutcome
    var description: String { "unexpected commit outcome: \(outcome)" }
}

extension Container {
    /// Commits a put and returns its outcome.
    func put(
        _ id: FileID, base: EntryVersion, _ state: EntryState, device: String = "device-a"
    ) async throws -> CommitOutcome {
        try await commit(CommitRequest(id: id, baseVersion: base, change: .put(state), device: device))
    }

    func delete(_ id: FileID, base: EntryVersion, device: String = "device-a") async throws -> CommitOutcome {
        try await commit(CommitRequest(id: id, baseVersion: base, change: .delete, device: device))
    }

    /// Commits a put that must succeed; returns the committed entry.
    @discardableResult
    func mustPut(_ id: FileID, base: EntryVersion, _ state: EntryState) async throws -> RemoteEntry {
        let outcome = try await put(id, base: base, state)
        guard case .committed(let entry) = outcome else { throw UnexpectedOutcome(outcome: outcome) }
        return entry
    }

    /// Commits a delete that must succeed; returns the tombstone.
    @discardableResult
    func mustDelete(_ id: FileID, base: EntryVersion) async throws -> RemoteEntry {
        let outcome = try await delete(id, base: base)
        guard case .committed(let entry) = outcome else { throw UnexpectedOutcome(outcome: outcome) }
        return entry
    }

    /// The cursor after everything committed so far.
    func currentCursor() async throws -> FeedCursor {
        var cursor = FeedCursor.beginning
        while true {
            let batch = try await changes(after: cursor, limit: 1_000)
            cursor = batch.cursor
            if !batch.moreComing { return cursor }
        }
    }
}

/// The error `body` throws, if it is a `ContainerProtocolError`.
func protocolError(_ body: () async throws -> Void) async -> ContainerProtocolError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? ContainerProtocolError
    }
}

extension ContainerProtocolError {
    var isInvalidRequest: Bool {
        if case .invalidRequest = self { return true }
        return false
    }

    var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }
}

/// Milliseconds since `start`.
func milliseconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
}

extension Container {
    /// The feed after `cursor` as one page when `whole` (pages read until none is more coming,
    /// each entry at its newest version, in order); else one call of `changes`. A sealed
    /// container answers smaller pages (its ledger entries take places of the page underneath).
    func changes(after cursor: FeedCursor, limit: Int, whole: Bool) async throws -> ChangeBatch {
        var batch = try await changes(after: cursor, limit: limit)
        guard whole else { return batch }
        var entries = batch.entries
        while batch.moreComing {
            batch = try await changes(after: batch.cursor, limit: limit)
            #expect(batch.entries.count <= limit)
            let newer = Set(batch.entries.map(\.id))
            entries = entries.filter { !newer.contains($0.id) } + batch.entries
        }
        return ChangeBatch(entries: entries, cursor: batch.cursor, moreComing: false)
    }
}
