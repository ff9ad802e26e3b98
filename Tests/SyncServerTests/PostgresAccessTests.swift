import Foundation
import Logging
import PostgresNIO
import SyncBackend
import SyncPostgresTesting
import SyncServerPostgres
import TestSupport
import Testing

@testable import SyncPostgres
@testable import SyncServer

/// What only the PostgreSQL access store must show: the tokens from before accounts (schema 6,
/// `PostgresTokens`) keep working as legacy editor tokens after the migration, and the tables
/// refuse rows no program of ours writes. Against the services' PostgreSQL.
@Suite struct PostgresAccessTests {
    private static let legacyToken = "sfs_" + String(repeating: "1", count: 64)

    /// A scratch database made by `prepare` (the schema, or an older one), a store opened on it
    /// (after initialising to the current schema), closed afterwards whatever happens.
    private static func withDatabase(
        prepare: (@Sendable (String) async throws -> Void)? = nil,
        _ body: (PostgresStore, String) async throws -> Void
    ) async throws {
        let database = try await PostgresScratchDatabase.create()
        let blobs = try TemporaryDirectory()
        var opened: PostgresStore?
        do {
            try await prepare?(database.url)
            let settings = try PostgresSettings(url: database.url)
            try await PostgresStore.initialize(settings: settings)
            let store = try await PostgresStore.open(
                settings: settings, blobs: try LocalChunkBlobStore.create(at: blobs.path))
            opened = store
            try await body(store, database.url)
        } catch {
            await opened?.shutdown()
            try? await database.drop()
            blobs.remove()
            throw error
        }
        await opened?.shutdown()
        try? await database.drop()
        blobs.remove()
    }

    @Test func aTokenOfTheLegacyCommandReadsAsALegacyEditorToken() async throws {
        try await Self.withDatabase { store, _ async throws in
            let digest = TokenFormat.digest(of: Self.legacyToken)
            #expect(
                try await PostgresTokens(store: store).insert(
                    id: "0000abcd", digest: digest, container: "box", label: "old", created: 5))
            let access = PostgresAccess(store: store)
            let token = try #require(try await access.token(digest: digest))
            #expect(
                token
                    == TokenRecord(
                        id: "0000abcd", user: nil, device: nil, containers: ["box"], role: .editor, label: "old",
                        created: 5, expires: nil))
            #expect(token.isLegacy)
            // The legacy authority still opens its container; a revocation through either API counts.
            #expect(
                try await AccessControl(store: PostgresAccess(store: store)).authenticate(
                    token: Self.legacyToken, address: nil)?.roles == ["box": .editor])
            #expect(try await access.revokeToken(id: "0000abcd", at: 9) == true)
            #expect(
                try await AccessControl(store: PostgresAccess(store: store)).authenticate(
                    token: Self.legacyToken, address: nil) == nil)
            #expect(try await PostgresTokens(store: store).revoke(id: "0000abcd", at: 10) == false)
        }
    }

    @Test func tokensOfUnknownUsersOrPastTheirExpiryGrantNothing() async throws {
        try await Self.withDatabase { store, _ async throws in
            // A user who does not exist, or an expired container token: no grant.
            let access = PostgresAccess(store: store)
            let viewer = "sfs_" + String(repeating: "2", count: 64)
            #expect(
                try await access.insertToken(
                    TokenRecord(
                        id: "0000beef", user: "ann", device: nil, containers: ["box"], role: .viewer, label: "",
                        created: 1, expires: nil), digest: TokenFormat.digest(of: viewer)))
            let expiring = "sfs_" + String(repeating: "3", count: 64)
            #expect(
                try await access.insertToken(
                    TokenRecord(
                        id: "0000bee0", user: nil, device: nil, containers: ["box"], role: .editor, label: "",
                        created: 1, expires: 2), digest: TokenFormat.digest(of: expiring)))
            #expect(
                try await AccessControl(store: PostgresAccess(store: store)).authenticate(token: viewer, address: nil)
                    == nil)
            #expect(
                try await AccessControl(store: PostgresAccess(store: store)).authenticate(token: expiring, address: nil)
                    == nil)
        }
    }

    @Test func theCollectionScheduleGoesThroughEveryContainerOfEveryToken() async throws {
        try await Self.withDatabase { store, _ async throws in
            #expect(
                try await PostgresTokens(store: store).insert(
                    id: "0000abcd", digest: String(repeating: "1", count: 64), container: "c", label: "", created: 1))
            #expect(
                try await PostgresAccess(store: store).insertToken(
                    TokenRecord(
                        id: "0000beef", user: "ann", device: nil, containers: ["b", "a"], role: .viewer, label: "",
                        created: 2, expires: nil), digest: String(repeating: "2", count: 64)))
            #expect(try await PostgresContainerSource(store: store).containerNames() == ["a", "b", "c"])
        }
    }

    /// A schema 6 database (before accounts) with a valid and a revoked token in its tokens table.
    private static let schemaSixWithTokens: @Sendable (String) async throws -> Void = { url in
        try await PostgresScratchDatabase.withAdmin(url) { client in
            try await PostgresSchema.migrate(client, logger: Logger(label: "test"), upTo: 6)
            _ = try await client.query(
                """
                INSERT INTO syncfs_tokens (id, digest, container, label, created, revoked)
                VALUES ('0000abcd', \(TokenFormat.digest(of: legacyToken)), 'box', 'old', 5, NULL),
                       ('0000abce', \(String(repeating: "9", count: 64)), 'other', 'gone', 6, 7)
                """)
        }
    }

    @Test func aSchemaSixDatabaseIsMigratedAndItsTokensKeepWorking() async throws {
        try await Self.withDatabase(prepare: Self.schemaSixWithTokens) { store, url async throws in
            #expect(
                try await PostgresScratchDatabase.withAdmin(url) { client in
                    for try await version in try await client.query("SELECT version FROM syncfs_schema").decode(
                        Int.self)
                    {
                        return version
                    }
                    return 0
                } == PostgresSchema.currentVersion)
            #expect(
                try await AccessControl(store: PostgresAccess(store: store)).authenticate(
                    token: Self.legacyToken, address: nil)?.roles == ["box": .editor])
            let access = PostgresAccess(store: store)
            #expect(
                try await access.tokens().map { token in
                    var token = token
                    (token.lastUsed, token.lastAddress) = (nil, nil)  // the check above was a use
                    return token
                } == [
                    TokenRecord(
                        id: "0000abcd", user: nil, device: nil, containers: ["box"], role: .editor, label: "old",
                        created: 5, expires: nil),
                    TokenRecord(
                        id: "0000abce", user: nil, device: nil, containers: ["other"], role: .editor, label: "gone",
                        created: 6, expires: nil, revoked: 7),
                ])
            #expect(try await access.revokeToken(id: "0000abcd", at: 9) == true)
            #expect(
                try await AccessControl(store: PostgresAccess(store: store)).authenticate(
                    token: Self.legacyToken, address: nil) == nil)
        }
    }

    @Test func theTablesRefuseWhatNoProgramOfOursWrites() async throws {
        try await Self.withDatabase { store, url async throws in
            let access = PostgresAccess(store: store)
            // A token itself where its digest belongs: refused (an error, not "taken").
            await #expect(throws: SyncServerError.self) {
                _ = try await access.insertToken(
                    TokenRecord(
                        id: "0000000a", user: "ann", device: nil, containers: ["box"], role: .viewer, label: "",
                        created: 1, expires: nil), digest: Self.legacyToken)
            }
            await #expect(throws: SyncServerError.self) {
                _ = try await access.insertToken(
                    TokenRecord(
                        id: "0000000a", user: "ann", device: nil, containers: [], role: .viewer, label: "",
                        created: 1, expires: nil), digest: String(repeating: "a", count: 64))
            }
            await #expect(throws: SyncServerError.self) {
                _ = try await access.insertUser(UserRecord(name: "Not A Name", passwordHash: nil, created: 1))
            }
            // Enumerations are checked by the table: a role or a link kind no program knows is refused.
            for statement in [
                "INSERT INTO syncfs_members (user_name, container, role) VALUES ('ann', 'box', 'owner')",
                """
                INSERT INTO syncfs_links (id, digest, container, prefix, kind, created, created_by, label)
                VALUES ('0000aaa1', '\(String(repeating: "b", count: 64))', 'box', '', 'edit', 1, 'admin', '')
                """,
                """
                INSERT INTO syncfs_tokens (id, digest, container, containers, role, label, created)
                VALUES ('0000000b', '\(String(repeating: "c", count: 64))', 'box', '{box}', 'root', '', 1)
                """,
            ] {
                await #expect(throws: (any Error).self) {
                    try await PostgresScratchDatabase.withAdmin(url) { client in
                        _ = try await client.query(PostgresQuery(unsafeSQL: statement))
                    }
                }
            }
            #expect(try await access.memberships(container: nil) == [])
            #expect(try await access.links(container: nil) == [])
            #expect(try await access.tokens() == [])
        }
    }
}
