import Foundation
import SyncBackend
import TestSupport
import Testing

@testable import SyncPostgres

/// The schema is made only by the explicit initialisation, migrations are idempotent, and a
/// database from a newer SyncFS is refused. Against the real PostgreSQL of `scripts/services.sh`:
/// without `SYNCFS_TEST_PG_URL` these fail, saying so.
@Suite struct PostgresSchemaTests {
    @Test func openingAnEmptyDatabaseIsRefusedAndCreatesNothing() async throws {
        let fixture = try await PostgresFixture.make(initialize: false)
        do {
            let store = try await fixture.open()
            await fixture.close(store)
            Issue.record("a database without the schema was opened")
        } catch {
            guard case .notInitialized(let text)? = error as? PostgresStoreError else {
                await fixture.close()
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(text.contains(fixture.database.name))
        }
        // Opening made no table: the schema table is still missing.
        await #expect(throws: (any Error).self) { try await fixture.sql("SELECT version FROM syncfs_schema") }
        await fixture.close()
    }

    @Test func initialisingTwiceIsHarmlessAndOpens() async throws {
        let fixture = try await PostgresFixture.make()
        try await PostgresStore.initialize(settings: fixture.settings)
        try await PostgresStore.initialize(url: fixture.database.url)
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "twice")
        #expect(try await container.entry(.root)?.version == 0)
        await fixture.close(store)
    }

    @Test func aNewerSchemaIsRefused() async throws {
        let fixture = try await PostgresFixture.make()
        try await fixture.sql("UPDATE syncfs_schema SET version = \(PostgresSchema.currentVersion + 1)")
        let expected = PostgresStoreError.schemaTooNew(
            found: PostgresSchema.currentVersion + 1, supported: PostgresSchema.currentVersion)
        await #expect(throws: expected) { try await fixture.open() }
        await #expect(throws: expected) { try await PostgresStore.initialize(settings: fixture.settings) }
        #expect(expected.description.contains("newer"))
        await fixture.close()
    }

    @Test func anOlderSchemaAsksForTheInitialisation() async throws {
        let fixture = try await PostgresFixture.make()
        try await fixture.sql("UPDATE syncfs_schema SET version = 0")
        await #expect(throws: PostgresStoreError.notInitialized("\(fixture.settings)")) { try await fixture.open() }
        await fixture.close()
    }

    @Test func aDeadServerIsUnavailableAndNeverShowsThePassword() async throws {
        let secret = "pw-" + UUID().uuidString
        // Port 1 on loopback: nothing listens there.
        let settings = try PostgresSettings(url: "postgres://syncfs:\(secret)@127.0.0.1:1/none", environment: [:])
        var options = PostgresStore.Options()
        options.operationTimeout = .seconds(1)
        let (logger, logged) = CapturingLogHandler.logger()
        options.logger = logger
        let blobs = try LocalChunkBlobStore.create(at: try makeTemporaryDirectory("deadpg"))
        do {
            _ = try await PostgresStore.open(settings: settings, blobs: blobs, options: options)
            Issue.record("a dead server was opened")
        } catch {
            guard case .unavailable = error else {
                Issue.record("not unavailable: \(error)")
                return
            }
            #expect(!error.description.contains(secret) && !String(reflecting: error).contains(secret))
        }
        await #expect(throws: PostgresStoreError.self) {
            try await PostgresStore.initialize(settings: settings, options: options)
        }
        // Every container call on a store that cannot reach its server is `unavailable`.
        let store = PostgresStore(settings: settings, blobs: blobs, options: options)
        let container = PostgresContainer(store: store, rowID: 1, containerID: "dead")
        let hash = ChunkHash(bytes: Array(repeating: 7, count: 32))!
        let calls: [(String, @Sendable () async throws -> Void)] = [
            ("entry", { _ = try await container.entry(.root) }),
            ("commit", { _ = try await container.commit(put(FileID.random(), base: 0, directory("d"))) }),
            ("changes", { _ = try await container.changes(after: .beginning, limit: 10) }),
            ("wait", { _ = try await container.waitForChanges(after: .beginning, timeout: .seconds(1)) }),
            ("missing", { _ = try await container.missingChunks([hash]) }),
            ("chunk", { _ = try await container.chunk(hash) }),
        ]
        for (name, call) in calls {
            let error = await containerError(call)
            guard case .unavailable(let text) = error else {
                Issue.record("\(name): not unavailable: \(String(describing: error))")
                continue
            }
            #expect(!text.contains(secret), "\(name)")
        }
        await store.shutdown()
        #expect(!logged.all.contains { $0.contains(secret) })
    }

    @Test func thePasswordIsNeverLoggedWhileWorking() async throws {
        let fixture = try await PostgresFixture.make()
        let secret = "pw-" + UUID().uuidString
        guard var components = URLComponents(string: fixture.database.url) else { throw TestFailure("bad URL") }
        components.password = secret
        let settings = try PostgresSettings(url: try #require(components.string), environment: [:])
        var options = PostgresStore.Options()
        let (logger, logged) = CapturingLogHandler.logger()
        options.logger = logger
        try await PostgresStore.initialize(settings: settings, options: options)
        let store = try await PostgresStore.open(settings: settings, blobs: fixture.blobs, options: options)
        let container = try await store.createContainer(named: "logged")
        _ = try await container.commit(put(FileID.random(), base: 0, directory("x")))
        _ = try await container.changes(after: .beginning, limit: 10)
        #expect(!logged.all.isEmpty, "nothing was logged, so nothing was checked")
        #expect(!logged.all.contains { $0.contains(secret) })
        await fixture.close(store)
    }
}
