import Foundation
import SQLiteSupport
import SyncBackend
import SyncServer
import TestSupport
import Testing

@testable import SyncFS

/// A fresh database file in a directory of its own, removed when the value is dropped.
final class ScratchDatabase {
    private let temporary: TemporaryDirectory
    var directory: String { temporary.path }
    var path: String { directory + "/test.db" }

    init() throws { temporary = try TemporaryDirectory("syncfs-sqlite-tests") }

    func connection() throws -> SQLiteConnection { try SQLiteConnection(path: path) }

    /// The names of the tables and indexes that exist.
    func objects() throws -> Set<String> {
        let statement = try connection().statement(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'")
        var names: Set<String> = []
        while try statement.step() { names.insert(statement.text(0)) }
        return names
    }
}

@Suite("SQLiteMigrations: the one schema runner")
struct SQLiteMigrationsTests {
    static let steps = [
        "CREATE TABLE one (a INTEGER);",
        "CREATE TABLE two (b INTEGER); INSERT INTO two VALUES (2);",
        "ALTER TABLE one ADD COLUMN c TEXT;",
    ]
    static let tables: [Set<String>] = [[], ["one"], ["one", "two"], ["one", "two"]]

    @Test func aFreshDatabaseGetsEveryStep() throws {
        let database = try ScratchDatabase()
        let connection = try database.connection()
        try SQLiteMigrations(Self.steps).migrate(connection)
        #expect(try connection.userVersion == 3)
        #expect(try database.objects() == ["one", "two"])
        try connection.execute("INSERT INTO one (a, c) VALUES (1, 'step 3 ran')")
    }

    @Test(arguments: 0...3) func anOlderDatabaseGetsOnlyTheMissingSteps(from version: Int) throws {
        let database = try ScratchDatabase()
        let connection = try database.connection()
        try SQLiteMigrations(Array(Self.steps.prefix(version))).migrate(connection)
        #expect(try connection.userVersion == version)
        #expect(try database.objects() == Self.tables[version])
        // Rerunning an applied step would fail ("table one already exists") or add a second row.
        try SQLiteMigrations(Self.steps).migrate(connection)
        #expect(try connection.userVersion == 3)
        let rows = try connection.statement("SELECT COUNT(*) FROM two")
        _ = try rows.step()
        #expect(rows.int64(0) == 1)
    }

    @Test func aNewerDatabaseIsRefusedNamingBothVersionsAndLeftAlone() throws {
        let database = try ScratchDatabase()
        let connection = try database.connection()
        try connection.execute("PRAGMA user_version = 7")
        #expect(throws: SQLiteSchemaTooNew(found: 7, supported: 3)) {
            try SQLiteMigrations(Self.steps).migrate(connection)
        }
        #expect(try connection.userVersion == 7)
        #expect(try database.objects().isEmpty)
        let message = String(describing: SQLiteSchemaTooNew(found: 7, supported: 3))
        #expect(message.contains("7") && message.contains("(3)"))
    }

    @Test func aFailingStepIsRolledBackAndLeavesTheVersion() throws {
        let database = try ScratchDatabase()
        let connection = try database.connection()
        // Step 2 creates a table, then fails: neither that table nor version 2 may remain.
        let failing = SQLiteMigrations([
            Self.steps[0], "CREATE TABLE half (x INTEGER); INSERT INTO nowhere VALUES (1);",
        ])
        #expect(throws: SQLiteError.self) { try failing.migrate(connection) }
        #expect(try connection.userVersion == 1)
        #expect(try database.objects() == ["one"])
        // The database is still usable: the fixed list carries on from step 2.
        try SQLiteMigrations(Self.steps).migrate(connection)
        #expect(try connection.userVersion == 3)
    }

    @Test func twoConnectionsMigratingTogetherApplyEachStepOnce() async throws {
        let database = try ScratchDatabase()
        _ = try database.connection()
        let path = database.path
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask { try SQLiteMigrations(Self.steps).migrate(SQLiteConnection(path: path)) }
            }
            try await group.waitForAll()
        }
        let connection = try database.connection()
        #expect(try connection.userVersion == 3)
        let rows = try connection.statement("SELECT COUNT(*) FROM two")
        _ = try rows.step()
        #expect(rows.int64(0) == 1)
    }
}

/// The three databases use the runner with their own, unchanged lists.
@Suite("SQLiteMigrations: the state database, container.db and tokens.db")
struct SchemaListTests {
    static let schemas: [(String, SQLiteMigrations, Int)] = [
        ("state.db", StateDatabaseSchema.migrations, 4),
        ("container.db", LocalContainerSchema.migrations, 4),
        ("tokens.db", TokenStoreSchema.migrations, 3),
    ]

    @Test(arguments: 0..<3) func eachUpgradesFromEveryOlderVersion(schema index: Int) throws {
        let (name, migrations, latest) = Self.schemas[index]
        #expect(migrations.latestVersion == latest, "\(name): the user_version a release writes changed")
        for version in 0..<latest {
            let database = try ScratchDatabase()
            let connection = try database.connection()
            try SQLiteMigrations(Array(migrations.steps.prefix(version))).migrate(connection)
            try migrations.migrate(connection)
            #expect(try connection.userVersion == latest, "\(name) from \(version)")
        }
    }

    @Test func aStateDatabaseFromANewerBuildIsRefusedByTheStore() throws {
        let database = try ScratchDatabase()
        try database.connection().execute("PRAGMA user_version = 9")
        #expect(throws: SQLiteSchemaTooNew(found: 9, supported: 4)) { try MetadataStore(path: database.path) }
    }

    @Test func aContainerDatabaseFromANewerBuildIsAnUnsupportedFormat() throws {
        let database = try ScratchDatabase()
        let root = database.directory + "/box"
        _ = try LocalContainer.openOrCreate(at: root)
        let connection = try SQLiteConnection(path: root + "/container.db")
        try connection.execute("PRAGMA user_version = 5")
        do {
            _ = try LocalContainer.openExisting(at: root)
            Issue.record("a container.db of schema 5 was opened")
        } catch {
            guard case .unsupportedFormat(let message) = error else {
                Issue.record("expected unsupportedFormat, got \(error)")
                return
            }
            #expect(message.contains("version 5") && message.contains("(4)"), "\(message)")
        }
    }
}

/// A server's `tokens.db` from before accounts (schema 1) keeps its tokens: after the upgrade each
/// is a container token, an editor of its one container, and a revoked one stays revoked.
@Suite struct TokenDatabaseUpgradeTests {
    @Test func schemaOneTokensBecomeContainerTokens() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        try FileManager.default.createDirectory(
            atPath: TokenStore.directory(root: root.path), withIntermediateDirectories: true)
        let old = try SQLiteConnection(path: TokenStore.path(root: root.path), create: true)
        try SQLiteMigrations(Array(TokenStoreSchema.migrations.steps.prefix(1))).migrate(old)
        let valid = "sfs_" + String(repeating: "a", count: 64)
        let revoked = "sfs_" + String(repeating: "b", count: 64)
        try old.execute(
            """
            INSERT INTO tokens (id, digest, container, label, created, revoked) VALUES
                ('0000000a', '\(TokenFormat.digest(of: valid))', 'box', 'old', 5, NULL),
                ('0000000b', '\(TokenFormat.digest(of: revoked))', 'box', 'gone', 6, 7)
            """)
        let store = try TokenStore(root: root.path)
        let access = AccessControl(store: EmbeddedAccessStore(store: store))
        #expect(try await access.authenticate(token: valid, address: nil)?.roles == ["box": .editor])
        #expect(try await access.authenticate(token: revoked, address: nil) == nil)
        let tokens = try await EmbeddedAccessStore(store: store).tokens()
        #expect(tokens.map(\.id) == ["0000000a", "0000000b"])
        #expect(
            tokens.allSatisfy { $0.isLegacy && $0.role == .editor && $0.containers == ["box"] && $0.expires == nil })
    }
}
