import Foundation
import SyncBackend
import SyncBackendTesting
import Testing

@testable import SyncFS

/// `MountLocks`, the mount's lock service, with the in-memory container standing for the
/// container every mount shares: locks of one mount's processes exclude each other, locks hold
/// across mounts, a blocking request waits without a thread and ends on unlock or interrupt, and
/// nothing is granted on an answer that does not fit the question.
@Suite struct MountLocksTests {
    let file = FileID.random()

    func flock(_ mode: LockMode, owner: UInt64) -> LockProbe {
        LockProbe(fileID: file, kind: .flock, mode: mode, owner: owner, pid: 100 + Int32(owner))
    }

    func posix(_ mode: LockMode, _ start: UInt64, _ end: UInt64, owner: UInt64) -> LockProbe {
        LockProbe(
            fileID: file, kind: .posix, mode: mode, range: LockRange(start: start, end: end), owner: owner,
            pid: 100 + Int32(owner))
    }

    @Test func processesOfOneMountExcludeEachOther() {
        let mount = LockMount(InMemoryContainer(), name: "a")
        defer { mount.stop() }
        #expect(mount.acquire(flock(.exclusive, owner: 1)) == .granted)
        #expect(mount.acquire(flock(.exclusive, owner: 2)) == .wouldBlock)
        #expect(mount.acquire(flock(.shared, owner: 2)) == .wouldBlock)
        // The same owner may change its own lock.
        #expect(mount.acquire(flock(.shared, owner: 1)) == .granted)
        #expect(mount.acquire(flock(.shared, owner: 2)) == .granted)
    }

    @Test func locksHoldAcrossMountsOfOneContainer() {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a")
        let b = LockMount(shared, name: "b")
        defer {
            a.stop()
            b.stop()
        }
        #expect(a.acquire(flock(.exclusive, owner: 1)) == .granted)
        #expect(b.acquire(flock(.exclusive, owner: 1)) == .wouldBlock)
        // fcntl ranges: apart both granted, overlapping refused; flock and fcntl are independent.
        #expect(a.acquire(posix(.exclusive, 0, 99, owner: 1)) == .granted)
        #expect(b.acquire(posix(.exclusive, 100, 199, owner: 1)) == .granted)
        #expect(b.acquire(posix(.shared, 50, 150, owner: 1)) == .wouldBlock)
        a.unlock(LockKey(fileID: file, kind: .flock, owner: 1))
        #expect(b.acquire(flock(.exclusive, owner: 1)) == .granted)
    }

    @Test func aBlockingRequestWaitsUntilTheHolderElsewhereUnlocks() {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a")
        let b = LockMount(shared, name: "b")
        defer {
            a.stop()
            b.stop()
        }
        #expect(a.acquire(flock(.exclusive, owner: 1)) == .granted)
        let (_, answer) = b.startWaiting(flock(.exclusive, owner: 7))
        #expect(answer.wait(seconds: 0.6) == nil, "granted while A holds it")
        a.unlock(LockKey(fileID: file, kind: .flock, owner: 1))
        #expect(answer.wait() == .granted)
    }

    @Test func anInterruptEndsTheWaitAndTakesNothing() {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a")
        let b = LockMount(shared, name: "b")
        defer {
            a.stop()
            b.stop()
        }
        #expect(a.acquire(flock(.exclusive, owner: 1)) == .granted)
        let (waiter, answer) = b.startWaiting(flock(.exclusive, owner: 7))
        #expect(answer.wait(seconds: 0.3) == nil)
        waiter.cancel()
        #expect(answer.wait() == .interrupted)
        a.unlock(LockKey(fileID: file, kind: .flock, owner: 1))
        #expect(a.acquire(flock(.exclusive, owner: 2)) == .granted, "the interrupted request took the lock")
    }

    @Test func stoppingReleasesTheSessionAndAnswersTheWaiting() async throws {
        let shared = InMemoryContainer()
        let a = LockMount(shared, name: "a")
        let b = LockMount(shared, name: "b")
        defer { b.stop() }
        #expect(a.acquire(flock(.exclusive, owner: 1)) == .granted)
        let (_, answer) = a.startWaiting(flock(.exclusive, owner: 2))
        #expect(a.acquire(posix(.exclusive, 0, 9, owner: 3)) == .granted)
        #expect(try await shared.locks(on: file).count == 2)
        a.stop()
        #expect(answer.wait() == .interrupted)
        #expect(try await shared.locks(on: file).isEmpty)
        #expect(b.acquire(flock(.exclusive, owner: 1)) == .granted)
    }

    @Test func garbledAnswersAreRefusedNeverGranted() {
        let other = FileID.random()
        let answers: [LockAnswer] = [
            .granted(expiresAt: .max),
            .granted(expiresAt: -5),
            .blocked(
                by: HeldLock(
                    fileID: other, kind: .flock, mode: .exclusive, range: .wholeFile, session: .random(), owner: 1,
                    holderName: "x", expiresAt: Clock.nowNanoseconds() + 10_000_000_000)),
            .blocked(
                by: HeldLock(
                    fileID: file, kind: .flock, mode: .exclusive, range: .wholeFile, session: .random(), owner: 1,
                    holderName: "x", expiresAt: .max)),
        ]
        for answer in answers {
            let mount = LockMount(InMemoryContainer(), name: "a", container: AnsweringLocks(answer))
            defer { mount.stop() }
            guard case .failed? = mount.acquire(flock(.exclusive, owner: 1)) else {
                Issue.record("\(answer) was not refused")
                continue
            }
            #expect(mount.locks.book.snapshot.locks(on: file).isEmpty)
        }
    }
}

extension MountLocksTests {
    @Test func aContainerThatDoesNotAnswerHoldsUpNoRequest() throws {
        let silent = FaultInjectingContainer(InMemoryContainer())
        // As long as the HTTP client's own deadline.
        silent.delay(.locks, by: .seconds(30))
        let mount = LockMount(InMemoryContainer(), name: "a", container: silent)
        defer { mount.stop() }
        let first = mount.startWaiting(flock(.exclusive, owner: 1)).1
        #expect(first.wait(seconds: 5) == .granted, "no answer within a few seconds")
        // The container is known unreachable now: the next requests are decided here at once.
        let calls = silent.callCount(.locks)
        let second = mount.startWaiting(posix(.exclusive, 0, 9, owner: 2)).1
        #expect(second.wait(seconds: 1) == .granted)
        let third = AnswerBox<LockOutcome>()
        mount.locks.acquire(flock(.exclusive, owner: 3), blocking: false) { third.set($0) }
        #expect(third.wait(seconds: 1) == .wouldBlock)
        let holdings = AnswerBox<[LockHolding]>()
        DispatchQueue.global().async { [file] in holdings.set(mount.locks.holdings(on: file)) }
        #expect(holdings.wait(seconds: 1)?.map(\.localOnly) == [true, true])
        // Renewals still run: each round tries the container (and gives up at the deadline).
        let round = AnswerBox<Bool>()
        mount.locks.keepLeases { round.set(true) }
        #expect(round.wait(seconds: 5) == true)
        #expect(silent.callCount(.locks) > calls)
    }
}

/// A container whose every claim gets one fixed answer (renewals: nothing held).
struct AnsweringLocks: ContainerLocks {
    let answer: LockAnswer
    init(_ answer: LockAnswer) { self.answer = answer }
    func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer { answer }
    func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {}
    func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError) -> [HeldLock] { [] }
    func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {}
    func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] { [] }
}
