import TestSupport
import Testing

@testable import SyncBackend

/// The `ContainerLocks` contract, checked against every implementation that keeps locks.
let lockKinds = ContainerKind.allCases

/// Two mounts of one container: two sessions, each with its device name.
struct LockParties {
    let container: any ContainerLocks
    let first = LockSession.random()
    let second = LockSession.random()
    let file = FileID.random()

    init(_ fixture: ContainerFixture) throws {
        container = try #require(fixture.container as? any ContainerLocks)
    }

    func claim(
        _ session: LockSession, _ mode: LockMode, _ range: LockRange = .wholeFile, kind: LockKind = .posix,
        owner: UInt64 = 7
    ) -> LockClaim {
        LockClaim(
            fileID: file, kind: kind, mode: mode, range: range, session: session, owner: owner,
            holderName: session == first ? "first-machine" : "second-machine")
    }

    func isGranted(_ claim: LockClaim, leaseSeconds: Int = 30) async throws -> Bool {
        if case .granted = try await container.lock(claim, leaseSeconds: leaseSeconds) { return true }
        return false
    }

    func blocker(_ claim: LockClaim) async throws -> HeldLock? {
        if case .blocked(let held) = try await container.lock(claim, leaseSeconds: 30) { return held }
        return nil
    }
}

@Suite("Container locks conformance")
struct ContainerLocksConformanceTests {
    @Test(arguments: lockKinds)
    func twoSessionsConflictAndTheHolderIsNamed(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let parties = try LockParties(fixture)
        let before = WallClock.nanoseconds()
        let answer = try await parties.container.lock(parties.claim(parties.first, .exclusive), leaseSeconds: 30)
        guard case .granted(let expiresAt) = answer else {
            Issue.record("not granted: \(answer)")
            return
        }
        #expect(expiresAt >= before + 30_000_000_000 && expiresAt <= WallClock.nanoseconds() + 30_000_000_000)

        let held = try #require(
            try await parties.blocker(parties.claim(parties.second, .shared, LockRange(start: 5, end: 5))))
        #expect(held.session == parties.first && held.owner == 7 && held.holderName == "first-machine")
        #expect(held.fileID == parties.file && held.mode == .exclusive && held.range == .wholeFile)
        #expect(held.expiresAt == expiresAt)
        // A flock is independent of the posix lock.
        #expect(try await parties.isGranted(parties.claim(parties.second, .exclusive, kind: .flock)))
        let listed = try await parties.container.locks(on: parties.file)
        #expect(listed.map(\.kind) == [.flock, .posix])
        #expect(listed.map(\.session) == [parties.second, parties.first])
        #expect(try await parties.container.locks(on: .random()).isEmpty)
    }

    @Test(arguments: lockKinds)
    func rangesSplitMergeAndUnlock(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let parties = try LockParties(fixture)
        let first = parties.first
        #expect(try await parties.isGranted(parties.claim(first, .exclusive, LockRange(start: 0, end: 99))))
        #expect(try await parties.isGranted(parties.claim(first, .shared, LockRange(start: 40, end: 59))))
        let pieces = try await parties.container.locks(on: parties.file)
        #expect(
            pieces.map(\.range)
                == [0...39, 40...59, 60...99].map { LockRange(start: $0.lowerBound, end: $0.upperBound) })
        #expect(pieces.map(\.mode) == [.exclusive, .shared, .exclusive])
        #expect(
            try await parties.isGranted(parties.claim(parties.second, .shared, LockRange(start: 50, end: .max - 1)))
                == false)
        #expect(try await parties.isGranted(parties.claim(parties.second, .shared, LockRange(start: 50, end: 59))))

        try await parties.container.unlock(
            LockRelease(
                fileID: parties.file, kind: .posix, range: LockRange(start: 60, end: .max), session: first, owner: 7))
        #expect(try await parties.isGranted(parties.claim(parties.second, .exclusive, LockRange(start: 60, end: .max))))
        try await parties.container.unlock(
            LockRelease(fileID: parties.file, kind: .posix, session: parties.second, owner: 7))
        #expect(try await parties.isGranted(parties.claim(first, .exclusive, LockRange(start: 40, end: 59))))
        #expect(try await parties.container.locks(on: parties.file).map(\.range) == [LockRange(start: 0, end: 59)])
    }

    @Test(arguments: lockKinds)
    func anExpiredLeaseFreesTheLockAndRenewalKeepsIt(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let parties = try LockParties(fixture)
        let minimum = LockLimits.leaseSeconds.lowerBound
        let renewedFile = FileID.random()
        var renewed = parties.claim(parties.first, .exclusive)
        renewed.fileID = renewedFile
        #expect(try await parties.isGranted(renewed, leaseSeconds: minimum))
        #expect(try await parties.isGranted(parties.claim(parties.second, .exclusive), leaseSeconds: minimum))

        // The second session stops renewing; the first renews until the second's lease is gone.
        try await eventually("the second session's lease expires", timeout: 60) {
            let held = try await parties.container.renewLocks(session: parties.first, leaseSeconds: minimum)
            #expect(held.map(\.fileID) == [renewedFile])
            return try await parties.container.locks(on: parties.file).isEmpty
        }
        // A long lease from now on, so that a slow machine does not let it end during the checks.
        let longest = LockLimits.leaseSeconds.upperBound
        #expect(try await parties.container.renewLocks(session: parties.first, leaseSeconds: longest).count == 1)
        #expect(try await parties.isGranted(parties.claim(parties.first, .shared)))
        // The first session's renewed lock still holds.
        var intruder = parties.claim(parties.second, .shared)
        intruder.fileID = renewedFile
        #expect(try await parties.blocker(intruder)?.session == parties.first)
        // The second session's renewal answers that it lost its lock.
        #expect(try await parties.container.renewLocks(session: parties.second, leaseSeconds: minimum).isEmpty)
    }

    @Test(arguments: lockKinds)
    func releaseLocksDropsEveryLockOfTheSession(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let parties = try LockParties(fixture)
        #expect(try await parties.isGranted(parties.claim(parties.first, .exclusive, kind: .flock)))
        #expect(
            try await parties.isGranted(parties.claim(parties.first, .exclusive, LockRange(start: 0, end: 0), owner: 8))
        )
        #expect(try await parties.isGranted(parties.claim(parties.second, .shared, LockRange(start: 1, end: 1))))
        try await parties.container.releaseLocks(session: parties.first)
        #expect(try await parties.container.locks(on: parties.file).map(\.session) == [parties.second])
        #expect(try await parties.container.renewLocks(session: parties.first, leaseSeconds: 30).isEmpty)
        #expect(try await parties.isGranted(parties.claim(parties.second, .exclusive, kind: .flock)))
    }

    @Test(arguments: lockKinds)
    func badClaimsAreRefused(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let parties = try LockParties(fixture)
        let claim = parties.claim(parties.first, .shared)
        for lease in [0, LockLimits.leaseSeconds.lowerBound - 1, LockLimits.leaseSeconds.upperBound + 1] {
            #expect(
                await protocolError { _ = try await parties.container.lock(claim, leaseSeconds: lease) }?
                    .isInvalidRequest == true)
            #expect(
                await protocolError {
                    _ = try await parties.container.renewLocks(session: parties.first, leaseSeconds: lease)
                }?
                .isInvalidRequest == true)
        }
        var backwards = claim
        backwards.range = LockRange(start: 2, end: 1)
        #expect(
            await protocolError { _ = try await parties.container.lock(backwards, leaseSeconds: 30) }?.isInvalidRequest
                == true)
        var badName = claim
        badName.holderName = "line\nbreak"
        #expect(
            await protocolError { _ = try await parties.container.lock(badName, leaseSeconds: 30) }?.isInvalidRequest
                == true)
        #expect(try await parties.container.locks(on: parties.file).isEmpty)
    }

    @Test(arguments: lockKinds)
    func aSessionHoldsAtMostItsLimit(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let parties = try LockParties(fixture)
        // Spread over two files, so a backend that loads one file's locks must count the others.
        let limit = UInt64(LockLimits.maxLocksPerSession)
        // The longest lease: a slow backend's first locks must not expire while the last are taken.
        let longest = LockLimits.leaseSeconds.upperBound
        for index in 0..<limit {
            var claim = parties.claim(parties.first, .shared, LockRange(start: index * 2, end: index * 2))
            if index % 2 == 1 { claim.fileID = FileID(high: 1, low: 1) }
            #expect(try await parties.isGranted(claim, leaseSeconds: longest))
        }
        let over = parties.claim(parties.first, .shared, LockRange(start: limit * 2, end: limit * 2))
        #expect(
            await protocolError { _ = try await parties.container.lock(over, leaseSeconds: 30) }?.isInvalidRequest
                == true)
        #expect(
            try await parties.isGranted(
                parties.claim(parties.second, .shared, LockRange(start: limit * 2, end: limit * 2))))
    }
}
