import Foundation
import TestSupport
import Testing

@testable import SyncBackend

/// The local container's locks beyond the shared contract (`ContainerLocksConformanceTests`):
/// every opening of one container directory (each mount of it on the machine has its own) shares
/// them through `container.db`, and claims on one file are serialised.
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
}
