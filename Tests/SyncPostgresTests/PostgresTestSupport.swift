import Foundation
import Logging
import PostgresNIO
import SyncBackend
import SyncPostgresTesting
import Synchronization
import TestSupport

@testable import SyncPostgres

/// A scratch database with the schema, a blob directory, and stores opened on it (each store is
/// what one server process would have: its own pool and listener). `close()` shuts the stores
/// down and drops the database.
final class PostgresFixture: Sendable {
    let database: PostgresScratchDatabase
    let settings: PostgresSettings
    let blobDirectory: String
    let blobs: LocalChunkBlobStore

    private init(database: PostgresScratchDatabase, blobDirectory: String) throws {
        self.database = database
        self.settings = try PostgresSettings(url: database.url)
        self.blobDirectory = blobDirectory
        self.blobs = try LocalChunkBlobStore.create(at: blobDirectory)
    }

    /// A fresh database; initialised (the schema made) unless `initialize` is false.
    static func make(initialize: Bool = true) async throws -> PostgresFixture {
        let database = try await PostgresScratchDatabase.create()
        let directory = try makeTemporaryDirectory("syncpostgres")
        let fixture = try PostgresFixture(database: database, blobDirectory: directory)
        if initialize { try await PostgresStore.initialize(settings: fixture.settings) }
        return fixture
    }

    /// Makes the schema of an older SyncFS: the migrations up to `version` only.
    func initialize(upTo version: Int) async throws {
        try await PostgresScratchDatabase.withAdmin(database.url) { client in
            try await PostgresSchema.migrate(client, logger: Logger(label: "test"), upTo: version)
        }
    }

    func open(recheck: Duration = .seconds(5), timeout: Duration = .seconds(20)) async throws -> PostgresStore {
        var options = PostgresStore.Options()
        options.recheckInterval = recheck
        options.operationTimeout = timeout
        return try await PostgresStore.open(settings: settings, blobs: blobs, options: options)
    }

    /// Runs SQL of the test's own on the fixture's database.
    func sql(_ query: String) async throws {
        try await PostgresScratchDatabase.withAdmin(database.url) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: query))
        }
    }

    /// The one integer a query of the test's own answers (a count).
    func integer(_ query: String) async throws -> Int64? {
        try await PostgresScratchDatabase.withAdmin(database.url) { client in
            for try await value in try await client.query(PostgresQuery(unsafeSQL: query)).decode(Int64.self) {
                return value
            }
            return nil
        }
    }

    func close(_ stores: PostgresStore...) async {
        for store in stores { await store.shutdown() }
        try? await database.drop()
        try? FileManager.default.removeItem(atPath: blobDirectory)
    }
}

/// Waits (generous deadline) until `store` listens for notifications.
func waitUntilListening(_ store: PostgresStore) async throws {
    try await eventually("the store listens for notifications", timeout: 30) { store.isListening }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func directory(_ name: String, in parent: FileID = .root) -> EntryState {
    EntryState(parent: parent, name: Array(name.utf8), kind: .directory, mode: 0o755, mtime: 1_000, size: 0)
}

func put(_ id: FileID, base: EntryVersion, _ state: EntryState, device: String = "d") -> CommitRequest {
    CommitRequest(id: id, baseVersion: base, change: .put(state), device: device)
}

/// The error `body` throws, as a `ContainerProtocolError` (nil if it did not throw one).
func containerError(_ body: () async throws -> Void) async -> ContainerProtocolError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? ContainerProtocolError
    }
}

/// A log handler that keeps every message with its metadata as text, to check what was logged.
struct CapturingLogHandler: LogHandler {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    let captured: Lines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        captured.lines.withLock { $0.append("\(event.level) \(event.message) \(merged)") }
    }

    /// A logger at `trace` whose lines end up in the returned `Lines`.
    static func logger() -> (Logger, Lines) {
        let lines = Lines()
        return (Logger(label: "test") { _ in CapturingLogHandler(captured: lines) }, lines)
    }
}
