import Testing

@testable import SyncBackend

/// The lock algorithm every container applies (`LockTable`): conflicts, fcntl's split and merge
/// of one owner's ranges, flock conversions, leases, and the limits.
@Suite("Lock table")
struct LockTableTests {
    let file = FileID.random()
    let alice = LockSession.random()
    let bob = LockSession.random()
    let second: Int64 = 1_000_000_000
    let now: Int64 = 1_700_000_000_000_000_000

    func claim(
        _ session: LockSession, owner: UInt64 = 1, _ mode: LockMode, _ start: UInt64, _ end: UInt64,
        kind: LockKind = .posix, file: FileID? = nil
    ) -> LockClaim {
        LockClaim(
            fileID: file ?? self.file, kind: kind, mode: mode, range: LockRange(start: start, end: end),
            session: session, owner: owner, holderName: session == alice ? "alice-laptop" : "bob-desktop")
    }

    func release(_ session: LockSession, owner: UInt64 = 1, _ start: UInt64, _ end: UInt64, kind: LockKind = .posix)
        -> LockRelease
    {
        LockRelease(fileID: file, kind: kind, range: LockRange(start: start, end: end), session: session, owner: owner)
    }

    /// The table's locks as (mode, start, end) of one owner, in range order.
    func ranges(_ table: LockTable, _ session: LockSession, owner: UInt64 = 1) -> [String] {
        table.live(on: file, now: now).filter { $0.isHeld(by: session, owner: owner) }.map {
            "\($0.mode == .exclusive ? "x" : "s") \($0.range)"
        }
    }

    func granted(_ answer: LockAnswer) -> Bool {
        if case .granted = answer { return true }
        return false
    }

    func blocker(_ answer: LockAnswer) -> HeldLock? {
        if case .blocked(let held) = answer { return held }
        return nil
    }

    @Test func exclusiveConflictsWithAnyOverlapAndSharedWithShared() throws {
        var table = LockTable()
        #expect(
            try table.lock(claim(alice, .exclusive, 10, 19), leaseSeconds: 30, now: now)
                == .granted(expiresAt: now + 30 * second))
        let held = try #require(blocker(try table.lock(claim(bob, .shared, 19, 25), leaseSeconds: 30, now: now)))
        #expect(
            held.session == alice && held.range == LockRange(start: 10, end: 19) && held.holderName == "alice-laptop")
        #expect(blocker(try table.lock(claim(bob, .exclusive, 0, 10), leaseSeconds: 30, now: now)) != nil)
        // Ranges that do not overlap do not conflict.
        #expect(granted(try table.lock(claim(bob, .exclusive, 20, 29), leaseSeconds: 30, now: now)))
        #expect(granted(try table.lock(claim(bob, .exclusive, 0, 9), leaseSeconds: 30, now: now)))
        // Shared with shared never conflicts.
        #expect(granted(try table.lock(claim(alice, .shared, 100, 200), leaseSeconds: 30, now: now)))
        #expect(granted(try table.lock(claim(bob, .shared, 150, .max), leaseSeconds: 30, now: now)))
        #expect(blocker(try table.lock(claim(bob, .exclusive, 199, 199), leaseSeconds: 30, now: now))?.session == alice)
    }

    @Test func ownersOfOneSessionConflictButAnOwnerNeverConflictsWithItself() throws {
        var table = LockTable()
        #expect(granted(try table.lock(claim(alice, owner: 1, .exclusive, 0, 9), leaseSeconds: 30, now: now)))
        #expect(blocker(try table.lock(claim(alice, owner: 2, .shared, 5, 5), leaseSeconds: 30, now: now))?.owner == 1)
        #expect(granted(try table.lock(claim(alice, owner: 1, .exclusive, 5, 5), leaseSeconds: 30, now: now)))
    }

    @Test func flockAndPosixAreIndependentAndOtherFilesDoNotConflict() throws {
        var table = LockTable()
        #expect(granted(try table.lock(claim(alice, .exclusive, 0, .max, kind: .flock), leaseSeconds: 30, now: now)))
        #expect(granted(try table.lock(claim(bob, .exclusive, 0, .max, kind: .posix), leaseSeconds: 30, now: now)))
        #expect(
            granted(
                try table.lock(
                    claim(bob, .exclusive, 0, .max, kind: .flock, file: .random()), leaseSeconds: 30, now: now)))
        #expect(
            blocker(try table.lock(claim(bob, .shared, 0, 0, kind: .flock), leaseSeconds: 30, now: now))?.kind == .flock
        )
    }

    @Test func aFlockCoversTheWholeFileWhateverRangeIsClaimedAndConverts() throws {
        var table = LockTable()
        #expect(granted(try table.lock(claim(alice, .shared, 7, 8, kind: .flock), leaseSeconds: 30, now: now)))
        #expect(table.locks.map(\.range) == [.wholeFile])
        // Upgrade and downgrade replace the owner's flock.
        #expect(granted(try table.lock(claim(alice, .exclusive, 0, 0, kind: .flock), leaseSeconds: 30, now: now)))
        #expect(table.locks.map(\.mode) == [.exclusive])
        #expect(
            blocker(try table.lock(claim(bob, .shared, 1000, 1000, kind: .flock), leaseSeconds: 30, now: now)) != nil)
        #expect(granted(try table.lock(claim(alice, .shared, 0, 0, kind: .flock), leaseSeconds: 30, now: now)))
        #expect(table.locks.map(\.mode) == [.shared])
        #expect(granted(try table.lock(claim(bob, .shared, 0, 0, kind: .flock), leaseSeconds: 30, now: now)))
        // Unlock of a flock drops it whatever the range.
        try table.unlock(release(alice, 5, 6, kind: .flock), now: now)
        #expect(table.locks.map(\.session) == [bob])
    }

    @Test func aNewRangeSplitsTheOwnersLockAndChangesTheModeOfItsPart() throws {
        var table = LockTable()
        _ = try table.lock(claim(alice, .exclusive, 0, 99), leaseSeconds: 30, now: now)
        // Downgrade the middle: three pieces.
        _ = try table.lock(claim(alice, .shared, 40, 59), leaseSeconds: 30, now: now)
        #expect(ranges(table, alice) == ["x 0-39", "s 40-59", "x 60-99"])
        // Bob may share the shared middle only.
        #expect(granted(try table.lock(claim(bob, .shared, 45, 50), leaseSeconds: 30, now: now)))
        #expect(blocker(try table.lock(claim(bob, .shared, 39, 40), leaseSeconds: 30, now: now))?.range.start == 0)
        // Upgrading the middle back is blocked by Bob's shared lock, and changes nothing.
        let before = table
        #expect(blocker(try table.lock(claim(alice, .exclusive, 40, 59), leaseSeconds: 30, now: now))?.session == bob)
        #expect(table == before)
        try table.unlock(release(bob, 0, .max), now: now)
        // Upgrade merges the three pieces into one again.
        _ = try table.lock(claim(alice, .exclusive, 40, 59), leaseSeconds: 30, now: now)
        #expect(ranges(table, alice) == ["x 0-99"])
    }

    @Test func adjacentRangesOfOneModeMergeAndOfTwoModesDoNot() throws {
        var table = LockTable()
        _ = try table.lock(claim(alice, .shared, 0, 9), leaseSeconds: 30, now: now)
        _ = try table.lock(claim(alice, .shared, 20, 29), leaseSeconds: 30, now: now)
        _ = try table.lock(claim(alice, .exclusive, 30, 39), leaseSeconds: 30, now: now)
        #expect(ranges(table, alice) == ["s 0-9", "s 20-29", "x 30-39"])
        _ = try table.lock(claim(alice, .shared, 10, 19), leaseSeconds: 30, now: now)
        #expect(ranges(table, alice) == ["s 0-29", "x 30-39"])
        _ = try table.lock(claim(alice, .shared, 5, .max), leaseSeconds: 30, now: now)
        #expect(ranges(table, alice) == ["s 0-EOF"])
    }

    @Test func unlockSubtractsTheRangeAndIgnoresWhatIsNotHeld() throws {
        var table = LockTable()
        _ = try table.lock(claim(alice, .exclusive, 0, .max), leaseSeconds: 30, now: now)
        _ = try table.lock(claim(alice, owner: 2, .shared, 0, .max, file: .random()), leaseSeconds: 30, now: now)
        try table.unlock(release(alice, 100, 199), now: now)
        #expect(ranges(table, alice) == ["x 0-99", "x 200-EOF"])
        try table.unlock(release(alice, 0, 0), now: now)
        try table.unlock(release(alice, 200, .max), now: now)
        #expect(ranges(table, alice) == ["x 1-99"])
        // Another owner's or session's unlock, or a flock unlock, leaves the lock alone.
        try table.unlock(release(alice, owner: 2, 0, .max), now: now)
        try table.unlock(release(bob, 0, .max), now: now)
        try table.unlock(release(alice, 0, .max, kind: .flock), now: now)
        #expect(ranges(table, alice) == ["x 1-99"])
        #expect(table.locks.count == 2)
    }

    @Test func anExpiredLeaseConflictsWithNothingAndIsDroppedLazily() throws {
        var table = LockTable()
        _ = try table.lock(claim(alice, .exclusive, 0, .max), leaseSeconds: 5, now: now)
        #expect(
            blocker(try table.lock(claim(bob, .exclusive, 0, 0), leaseSeconds: 5, now: now + 5 * second - 1)) != nil)
        let original = table
        let later = now + 5 * second
        #expect(table.live(on: file, now: later).isEmpty)
        #expect(
            try table.lock(claim(bob, .exclusive, 0, 0), leaseSeconds: 5, now: later)
                == .granted(expiresAt: later + 5 * second))
        #expect(table.locks.map(\.session) == [bob])
        let difference = table.difference(from: original)
        #expect(difference.removed.map(\.session) == [alice])
        #expect(difference.added.map(\.session) == [bob])
    }

    @Test func renewExtendsOnlyTheSessionsLiveLeasesAndAnswersWhatItHolds() throws {
        var table = LockTable()
        _ = try table.lock(claim(alice, .exclusive, 0, 9), leaseSeconds: 5, now: now)
        _ = try table.lock(claim(alice, .shared, 0, .max, kind: .flock, file: .random()), leaseSeconds: 60, now: now)
        _ = try table.lock(claim(bob, .exclusive, 10, 19), leaseSeconds: 5, now: now)
        // Six seconds later the 5-second lease is gone: only the flock is still Alice's.
        let later = now + 6 * second
        let held = try table.renew(session: alice, leaseSeconds: 30, now: later)
        #expect(held.map(\.kind) == [.flock])
        #expect(held.map(\.expiresAt) == [later + 30 * second])
        #expect(table.locks.allSatisfy { $0.session == alice })
        // Renewal within the lease keeps the lock.
        _ = try table.lock(claim(bob, .exclusive, 10, 19), leaseSeconds: 5, now: later)
        let renewed = try table.renew(session: bob, leaseSeconds: 5, now: later + 4 * second)
        #expect(renewed.map(\.range) == [LockRange(start: 10, end: 19)])
        #expect(blocker(try table.lock(claim(alice, .shared, 15, 15), leaseSeconds: 5, now: later + 8 * second)) != nil)
    }

    @Test func releaseDropsEveryLockOfTheSession() throws {
        var table = LockTable()
        _ = try table.lock(claim(alice, owner: 1, .exclusive, 0, 9), leaseSeconds: 30, now: now)
        _ = try table.lock(
            claim(alice, owner: 2, .exclusive, 0, 0, kind: .flock, file: .random()), leaseSeconds: 30, now: now)
        _ = try table.lock(claim(bob, .shared, 20, 29), leaseSeconds: 30, now: now)
        table.release(session: alice)
        #expect(table.locks.map(\.session) == [bob])
        #expect(granted(try table.lock(claim(bob, .exclusive, 0, 9), leaseSeconds: 30, now: now)))
    }

    @Test func badRequestsAreRefused() throws {
        var table = LockTable()
        for lease in [0, 4, 601, -1] {
            #expect(throws: ContainerProtocolError.self) {
                try table.lock(claim(alice, .shared, 0, 0), leaseSeconds: lease, now: now)
            }
            #expect(throws: ContainerProtocolError.self) {
                try table.renew(session: alice, leaseSeconds: lease, now: now)
            }
        }
        #expect(throws: ContainerProtocolError.self) {
            try table.lock(claim(alice, .shared, 10, 9), leaseSeconds: 5, now: now)
        }
        #expect(throws: ContainerProtocolError.self) { try table.unlock(release(alice, 10, 9), now: now) }
        for name in ["", String(repeating: "n", count: LockLimits.maxHolderNameBytes + 1), "evil\u{1B}[2J", "a\nb"] {
            var bad = claim(alice, .shared, 0, 0)
            bad.holderName = name
            #expect(throws: ContainerProtocolError.self) { try table.lock(bad, leaseSeconds: 5, now: now) }
        }
        #expect(table.locks.isEmpty)
        var named = claim(alice, .shared, 0, 0)
        named.holderName = String(repeating: "é", count: LockLimits.maxHolderNameBytes / 2)
        #expect(granted(try table.lock(named, leaseSeconds: 5, now: now)))
    }

    @Test func aSessionAndAContainerHoldAtMostTheirLimits() throws {
        var table = LockTable()
        let limit = UInt64(LockLimits.maxLocksPerSession)
        for index in 0..<limit {
            #expect(granted(try table.lock(claim(alice, .shared, index * 2, index * 2), leaseSeconds: 30, now: now)))
        }
        #expect(throws: ContainerProtocolError.invalidRequest("a session holds at most 1024 locks")) {
            try table.lock(claim(alice, .shared, limit * 2, limit * 2), leaseSeconds: 30, now: now)
        }
        // A claim that does not add a lock still goes (a merge, a mode change in place).
        #expect(granted(try table.lock(claim(alice, .exclusive, 0, 0), leaseSeconds: 30, now: now)))
        #expect(granted(try table.lock(claim(alice, .shared, 1, 1), leaseSeconds: 30, now: now)))
        #expect(table.locks.count == Int(limit))
        // Locks elsewhere count.
        let elsewhere = LockTable.Elsewhere(sessionLocks: 0, containerLocks: LockLimits.maxLocksPerContainer - 1)
        #expect(throws: ContainerProtocolError.invalidRequest("a container holds at most 100000 locks")) {
            try table.lock(claim(bob, .shared, limit * 4, limit * 4), leaseSeconds: 30, now: now, elsewhere: elsewhere)
        }
        var other = LockTable()
        let sessionElsewhere = LockTable.Elsewhere(sessionLocks: LockLimits.maxLocksPerSession, containerLocks: 0)
        #expect(throws: ContainerProtocolError.self) {
            try other.lock(claim(bob, .shared, 0, 0), leaseSeconds: 30, now: now, elsewhere: sessionElsewhere)
        }
    }

    @Test func aFileHoldsAtMostItsLimit() throws {
        let full = (0..<UInt64(LockLimits.maxLocksPerFile)).map { index in
            HeldLock(
                fileID: file, kind: .posix, mode: .shared, range: LockRange(start: index * 2, end: index * 2),
                session: .random(), owner: 1, holderName: "someone", expiresAt: now + 30 * second)
        }
        var table = LockTable(full)
        #expect(throws: ContainerProtocolError.invalidRequest("a file holds at most 4096 locks")) {
            try table.lock(claim(alice, .shared, 1, 1), leaseSeconds: 30, now: now)
        }
        #expect(granted(try table.lock(claim(alice, .shared, 1, 1, file: .random()), leaseSeconds: 30, now: now)))
        // Once some leases expired, there is room again.
        table = LockTable(
            full.enumerated().map { index, lock in
                var lock = lock
                if index < 10 { lock.expiresAt = now }
                return lock
            })
        #expect(granted(try table.lock(claim(alice, .shared, 1, 1), leaseSeconds: 30, now: now)))
    }

    @Test func sessionsAreThirtyTwoLowercaseHexDigits() {
        #expect(LockSession(hex: String(repeating: "0a", count: 16)) != nil)
        for bad in [
            "", "0A" + String(repeating: "0", count: 30), String(repeating: "0", count: 31),
            String(repeating: "g", count: 32),
        ] {
            #expect(LockSession(hex: bad) == nil)
        }
        #expect(LockSession.random() != LockSession.random())
    }
}
