import Foundation
import SyncBackend
import Testing

@testable import SyncFS

/// `LeaseKeeper` with the in-memory container: leases are renewed while held; a lock the
/// container no longer holds, a lease that ran out while the container could not be reached,
/// and a lock granted offline that another mount holds by the time it is claimed are lost —
/// reported, gone from the mount, and not shared; a lock granted offline that nobody took is
/// claimed when the container answers again.
@Suite struct LeaseKeeperTests {
    let file = FileID.random()

    func exclusive(owner: UInt64) -> LockProbe {
        LockProbe(fileID: file, kind: .flock, mode: .exclusive, owner: owner, pid: 42)
    }

    @Test func aRoundRenewsTheLease() async throws {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a", leaseSeconds: 60)
        defer { a.stop() }
        #expect(a.acquire(exclusive(owner: 1)) == .granted)
        let before = try #require(try await shared.locks(on: file).first).expiresAt
        a.keepLeases()
        let after = try #require(try await shared.locks(on: file).first).expiresAt
        #expect(after > before)
        #expect(a.reportedLost.isEmpty)
        #expect(a.locks.book.holds(LockKey(fileID: file, kind: .flock, owner: 1)))
    }

    @Test func aLockTheContainerNoLongerHoldsIsLost() async throws {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a")
        let b = LockMount(shared, name: "b")
        defer {
            a.stop()
            b.stop()
        }
        #expect(a.acquire(exclusive(owner: 1)) == .granted)
        // As if its lease had run out at the container (and another mount had come and gone).
        try await shared.releaseLocks(session: a.locks.session)
        a.keepLeases()
        #expect(a.reportedLost.map(\.fileID) == [file])
        #expect(!a.locks.book.holds(LockKey(fileID: file, kind: .flock, owner: 1)))
        #expect(b.acquire(exclusive(owner: 1)) == .granted)
        #expect(a.acquire(exclusive(owner: 2)) == .wouldBlock, "A still lets its processes share B's lock")
    }

    @Test func aLeaseThatRanOutWhileOfflineIsLost() {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a", leaseSeconds: 30)
        defer { a.stop() }
        #expect(a.acquire(exclusive(owner: 1)) == .granted)
        a.goOffline()
        a.keepLeases()
        #expect(a.reportedLost.isEmpty, "lost before its lease ran out")
        a.advance(seconds: 31)
        a.goOffline(false)
        a.keepLeases()
        #expect(a.reportedLost.count == 1)
        #expect(a.reportedLost.first?.reason.contains("lease ran out") == true)
        #expect(!a.locks.book.holds(LockKey(fileID: file, kind: .flock, owner: 1)))
    }

    @Test func aLockGrantedOfflineIsClaimedWhenTheContainerAnswers() async throws {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a")
        let b = LockMount(shared, name: "b")
        defer {
            a.stop()
            b.stop()
        }
        a.goOffline()
        #expect(a.acquire(exclusive(owner: 1)) == .granted)
        #expect(a.locks.holdings(on: file).map(\.localOnly) == [true])
        #expect(b.acquire(exclusive(owner: 1)) == .granted, "B cannot see a lock granted offline")
        b.unlock(LockKey(fileID: file, kind: .flock, owner: 1))
        a.goOffline(false)
        a.keepLeases()
        #expect(a.reportedLost.isEmpty)
        #expect(try await shared.locks(on: file).map(\.session) == [a.locks.session])
        #expect(a.locks.holdings(on: file).map(\.localOnly) == [false])
        #expect(b.acquire(exclusive(owner: 1)) == .wouldBlock)
    }

    @Test func aLockGrantedOfflineAndHeldElsewhereIsLostNotShared() async throws {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a")
        let b = LockMount(shared, name: "b")
        defer {
            a.stop()
            b.stop()
        }
        a.goOffline()
        #expect(a.acquire(exclusive(owner: 1)) == .granted)
        #expect(b.acquire(exclusive(owner: 1)) == .granted)
        a.goOffline(false)
        a.keepLeases()
        #expect(a.reportedLost.count == 1)
        #expect(a.reportedLost.first?.reason.contains("device 'b'") == true)
        #expect(!a.locks.book.holds(LockKey(fileID: file, kind: .flock, owner: 1)))
        #expect(try await shared.locks(on: file).map(\.session) == [b.locks.session])
        #expect(a.acquire(exclusive(owner: 3)) == .wouldBlock)
    }

    @Test func aLeaseRunsOutWhileTheContainerStillDoesNotAnswer() {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a", leaseSeconds: 30)
        defer { a.stop() }
        let other = FileID.random()
        #expect(a.acquire(exclusive(owner: 1)) == .granted)
        a.goOffline()
        #expect(a.acquire(LockProbe(fileID: other, kind: .flock, mode: .exclusive, owner: 2, pid: 43)) == .granted)
        a.keepLeases()
        #expect(a.reportedLost.isEmpty, "lost long before its lease ran out")
        a.advance(seconds: 30)
        a.keepLeases()
        #expect(a.reportedLost.map(\.fileID) == [file], "kept past its lease: another mount may hold it")
        #expect(a.reportedLost.first?.reason.contains("lease ran out") == true)
        #expect(!a.locks.book.holds(LockKey(fileID: file, kind: .flock, owner: 1)))
        #expect(
            a.locks.book.holds(LockKey(fileID: other, kind: .flock, owner: 2)),
            "a lock granted offline has no lease to run out")
    }

    @Test func aKeyKeepsItsEarliestLeaseEnd() {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a", leaseSeconds: 30)
        defer { a.stop() }
        let key = LockKey(fileID: file, kind: .posix, owner: 1)
        #expect(a.acquire(posix(0, 9, owner: 1)) == .granted)
        a.advance(seconds: 20)
        // A second range granted later (a later lease), and a third granted offline (none).
        #expect(a.acquire(posix(20, 29, owner: 1)) == .granted)
        a.goOffline()
        #expect(a.acquire(posix(40, 49, owner: 1)) == .granted)
        a.keepLeases()
        #expect(a.reportedLost.isEmpty)
        a.advance(seconds: 10)
        a.keepLeases()
        #expect(a.reportedLost.map(\.owner) == [1], "kept past the first range's lease")
        #expect(!a.locks.book.holds(key))
    }

    func posix(_ start: UInt64, _ end: UInt64, owner: UInt64) -> LockProbe {
        LockProbe(
            fileID: file, kind: .posix, mode: .exclusive, range: LockRange(start: start, end: end), owner: owner,
            pid: 42)
    }
}
