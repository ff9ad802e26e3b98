import Foundation
import SyncBackend
import SyncPostgresTesting
import TestSupport
import Testing

@testable import SyncPostgres

/// The token table (schema version 2) and the probe that reports a missing database at once,
/// against the real PostgreSQL of `scripts/services.sh`.
@Suite struct PostgresTokensTests {
    private let digest = String(repeating: "ab", count: 32)

    @Test func aTokenRowIsFoundByItsDigestUntilRevokedAndStaysListed() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let tokens = PostgresTokens(store: store)
        #expect(try await tokens.insert(id: "0000abcd", digest: digest, container: "box", label: "l", created: 5))
        // The same public ID again: false (the caller draws another), nothing replaced.
        #expect(
            try await !tokens.insert(
                id: "0000abcd", digest: String(repeating: "cd", count: 32),
                container: "other", label: "", created: 6))
        #expect(try await tokens.container(forDigest: digest) == "box")
        #expect(try await tokens.container(forDigest: String(repeating: "ee", count: 32)) == nil)
        #expect(try await tokens.revoke(id: "0000abcd", at: 9) == true)
        #expect(try await tokens.revoke(id: "0000abcd", at: 10) == false)
        #expect(try await tokens.revoke(id: "ffffffff", at: 10) == nil)
        #expect(try await tokens.container(forDigest: digest) == nil)
        #expect(
            try await tokens.list()
                == [PostgresTokens.Row(id: "0000abcd", container: "box", label: "l", created: 5, revoked: 9)])
        // The table refuses what is not a digest: a token itself can never be stored by mistake.
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await tokens.insert(
                id: "0000abce", digest: "sfs_" + String(repeating: "0", count: 64), container: "box", label: "",
                created: 1)
        }
        await fixture.close(store)
    }

    @Test func aVersionOneSchemaIsMigratedToHoldTokens() async throws {
        // A version 1 database, as made before tokens moved into it (and before the commit
        // functions of version 3 and the history of version 4): initialising migrates it.
        let fixture = try await PostgresFixture.make(initialize: false)
        try await fixture.initialize(upTo: 1)
        await #expect(throws: PostgresStoreError.schemaTooOld(found: 1, supported: PostgresSchema.currentVersion)) {
            _ = try await fixture.open()
        }
        try await PostgresStore.initialize(settings: fixture.settings)
        let store = try await fixture.open()
        #expect(try await PostgresTokens(store: store).list() == [])
        await fixture.close(store)
    }

    @Test func aDatabaseThatDoesNotExistIsReportedAtOnceNotAsATimeout() async throws {
        guard var components = URLComponents(string: try PostgresScratchDatabase.serverURL()) else {
            Issue.record("bad SYNCFS_TEST_PG_URL")
            return
        }
        components.path = "/syncfs_missing_" + UUID().uuidString.prefix(8).lowercased()
        let settings = try PostgresSettings(url: components.string ?? "")
        var options = PostgresStore.Options()
        // Longer than any test may wait: before the probe, the pool retried 3D000 until this.
        options.operationTimeout = .seconds(300)
        let started = ContinuousClock.now
        await #expect(throws: PostgresStoreError.databaseMissing(settings.description)) {
            _ = try await PostgresStore.open(
                settings: settings,
                blobs: LocalChunkBlobStore.create(
                    at: try makeTemporaryDirectory("syncpostgres")), options: options)
        }
        await #expect(throws: PostgresStoreError.databaseMissing(settings.description)) {
            try await PostgresStore.initialize(settings: settings, options: options)
        }
        // Far below the 300 s deadline whatever the machine's load.
        #expect(ContinuousClock.now - started < .seconds(120))
    }
}
