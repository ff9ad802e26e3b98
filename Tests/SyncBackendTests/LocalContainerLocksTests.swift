import Foundation
import SQLiteSupport
import TestSupport
import Testing

@testable import SyncBackend

/// The local container's locks beyond the shared contract (`ContainerLocksConformanceTests`):
/// every opening of one container directory (each mount of it on the machine has its own) shares
/// them through `container.db`, claims on one file are serialised, and expired leases do not
/// pile up.
@Suite("Local container locks")
struct LocalContainerLocksTests {
    func claim(_ file: FileID, _ session: LockSession, _ mode: LockMode = .exclusive) -> LockClaim {
        LockClaim(fileID: file, kind: .flock, mode: mode, session: session, owner: 1, holderName: "this machine")
    }

    @Test func twoOpeningsOfOneContainerShareTheLocks() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try LocalContainer.openOrCreate(at: directory + "/c")
        let second = try LocalContainer.openOrCreate(at: directory + "/c")
        let file = FileID.random()
        let holder = LockSession.random()
        guard case .granted = try await first.lock(claim(file, holder), leaseSeconds: 30) else {
            Issue.record("not granted")
            return
        }
        guard case .blocked(let by) = try await second.lock(claim(file, .random(), .shared), leaseSeconds: 30) else {
            Issue.record("the second opening granted a conflicting lock")
            return
        }
        #expect(by.session == holder && by.holderName == "this machine")
        try await second.releaseLocks(session: holder)
        #expect(try await first.locks(on: file).isEmpty)
    }

    @Test func concurrentExclusiveClaimsOnOneFileGrantOne() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let openings = try (0..<4).map { _ in try LocalContainer.openOrCreate(at: directory + "/c") }
        let file = FileID.random()
        let granted = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                let container = openings[index % openings.count]
                let claim = claim(file, .random())
                group.addTask {
                    if case .granted = try await container.lock(claim, leaseSeconds: 30) { return true }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(granted == 1)
        #expect(try await openings[0].locks(on: file).count == 1)
    }

    /// A hostile token holder's loop (claim many locks on random files from many sessions with
    /// the shortest lease, let them expire, again) must not grow the table: the next claim
    /// deletes every expired lease of the container, and is granted.
    @Test func expiredLeasesFromManySessionsDoNotPileUp() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: directory + "/c")
        let database = try SQLiteConnection(path: directory + "/c/container.db")
        // A full container's worth of leases that have expired: 1,000 sessions, each its own files.
        try database.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < \(LockLimits.maxLocksPerContainer))
            INSERT INTO locks (file_id, kind, session, owner, range_start, range_end, mode, holder, expires_at)
            SELECT printf('%032x', i), 'posix', printf('%032x', i % 1000), 1, 0, -1, 'exclusive', 'flood', 1 FROM n
            """)
        #expect(try Self.rowCount(database) == LockLimits.maxLocksPerContainer)

        let file = FileID.random()
        guard case .granted = try await container.lock(claim(file, .random()), leaseSeconds: 30) else {
            Issue.record("a claim after a flood of expired leases was not granted")
            return
        }
        #expect(try Self.rowCount(database) == 1, "the expired leases stayed")
        #expect(try await container.locks(on: file).count == 1)
    }

    static func rowCount(_ database: SQLiteConnection) throws -> Int {
        let statement = try database.statement("SELECT count(*) FROM locks")
        defer { statement.reset() }
        _ = try statement.step()
        return Int(statement.int64(0))
    }
}
