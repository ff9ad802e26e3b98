import Foundation
import SyncBackend
import Testing

@testable import SyncPostgres

/// The locks of a PostgreSQL store beyond the shared contract (`ContainerLocksConformanceTests`):
/// every server on one database shares them, claims on one file are serialised, expired leases
/// do not pile up, and a stored row that does not decode is a storage failure.
@Suite("PostgreSQL locks")
struct PostgresLocksTests {
    func claim(_ file: FileID, _ session: LockSession, _ mode: LockMode = .exclusive) -> LockClaim {
        LockClaim(fileID: file, kind: .flock, mode: mode, session: session, owner: 1, holderName: "server test")
    }

    @Test func twoServersOnOneDatabaseShareTheLocks() async throws {
        let fixture = try await PostgresFixture.make()
        let first = try await fixture.open()
        let second = try await fixture.open()
        let here = try await first.createContainer(named: "shared")
        let there = try #require(try await second.container(named: "shared"))
        let file = FileID.random()
        let holder = LockSession.random()
        guard case .granted = try await here.lock(claim(file, holder), leaseSeconds: 30) else {
            Issue.record("not granted")
            return
        }
        guard case .blocked(let by) = try await there.lock(claim(file, .random(), .shared), leaseSeconds: 30) else {
            Issue.record("the other server granted a conflicting lock")
            return
        }
        #expect(by.session == holder)
        #expect(try await there.locks(on: file).map(\.session) == [holder])
        try await there.releaseLocks(session: holder)
        #expect(try await here.locks(on: file).isEmpty)
        await fixture.close(first, second)
    }

    @Test func concurrentExclusiveClaimsOnOneFileGrantOne() async throws {
        let fixture = try await PostgresFixture.make()
        let first = try await fixture.open()
        let second = try await fixture.open()
        let here = try await first.createContainer(named: "race")
        let there = try #require(try await second.container(named: "race"))
        let file = FileID.random()
        // Each store's pool opens its connections first, so the claims then race each other.
        for container in [here, there] { _ = try await container.locks(on: .random()) }
        let granted = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                let container = index % 2 == 0 ? here : there
                let claim = claim(file, .random())
                group.addTask {
                    if case .granted = try await container.lock(claim, leaseSeconds: 30) { return true }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(granted == 1)
        #expect(try await here.locks(on: file).count == 1)
        await fixture.close(first, second)
    }

    /// A hostile token holder's loop (claim many locks on random files from many sessions with
    /// the shortest lease, let them expire, again) must not grow the table: the next claim
    /// deletes every expired lease of the container, and is granted.
    @Test func expiredLeasesFromManySessionsDoNotPileUp() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "flooded")
        // A full container's worth of leases that have expired: 1,000 sessions, each its own files.
        try await fixture.sql(
            """
            INSERT INTO syncfs_locks (container, file_id, kind, session, owner, range_start, range_end, mode,
                holder, expires_at)
            SELECT c.id, lpad(to_hex(i), 32, '0'), 'posix', lpad(to_hex(i % 1000), 32, '0'), 1, 0, -1, 'exclusive',
                'flood', 1
            FROM syncfs_containers c, generate_series(0, \(LockLimits.maxLocksPerContainer - 1)) AS i
            WHERE c.name = 'flooded'
            """)
        let count = "SELECT count(*) FROM syncfs_locks"
        #expect(try await fixture.integer(count) == Int64(LockLimits.maxLocksPerContainer))

        let file = FileID.random()
        guard case .granted = try await container.lock(claim(file, .random()), leaseSeconds: 30) else {
            Issue.record("a claim after a flood of expired leases was not granted")
            await fixture.close(store)
            return
        }
        #expect(try await fixture.integer(count) == 1, "the expired leases stayed")
        #expect(
            try await fixture.integer(
                "SELECT count(*) FROM pg_indexes WHERE indexname = 'syncfs_locks_by_expiry'") == 1)
        await fixture.close(store)
    }

    @Test func aStoredLockThatDoesNotDecodeIsAStorageFailure() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "damaged")
        let file = FileID.random()
        try await fixture.sql(
            """
            INSERT INTO syncfs_locks (container, file_id, kind, session, owner, range_start, range_end, mode,
                holder, expires_at)
            SELECT id, '\(file.hex)', 'posix', '\(LockSession.random().hex)', 1, 10, 5, 'shared', 'x',
                9000000000000000000
            FROM syncfs_containers WHERE name = 'damaged'
            """)
        do {
            _ = try await container.locks(on: file)
            Issue.record("a backwards range was read")
        } catch {
            guard case .storageFailure = error else {
                Issue.record("expected storageFailure, got \(error)")
                return
            }
        }
        await fixture.close(store)
    }
}
