import Foundation
import Logging
import SyncBackend
import Synchronization

@testable import SyncFS

/// A container's locks that can be cut off: while `offline`, every call fails at once as
/// unreachable (`unavailable`), as in a network outage.
final class SwitchableLocks: ContainerLocks {
    let base: InMemoryContainer
    let offline = Atomic<Bool>(false)

    init(_ base: InMemoryContainer) { self.base = base }

    private func admit() throws(ContainerProtocolError) {
        if offline.load(ordering: .relaxed) { throw .unavailable("cut off by the test") }
    }

    func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        try admit()
        return try await base.lock(claim, leaseSeconds: leaseSeconds)
    }

    func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        try admit()
        try await base.unlock(release)
    }

    func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError) -> [HeldLock] {
        try admit()
        return try await base.renewLocks(session: session, leaseSeconds: leaseSeconds)
    }

    func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try admit()
        try await base.releaseLocks(session: session)
    }

    func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try admit()
        return try await base.locks(on: fileID)
    }
}

/// One mount's lock service on a shared in-memory container, with its own monotonic clock
/// (`advance`) and the lost locks it reported. Stopped by `stop` (every test does).
final class LockMount: Sendable {
    let container: SwitchableLocks
    let locks: MountLocks
    private let clock = ManualClock()
    private let lost = LostReports()

    /// `container` replaces the switchable one (a hostile container).
    init(_ shared: InMemoryContainer, name: String, leaseSeconds: Int = 600, container: (any ContainerLocks)? = nil) {
        let switchable = SwitchableLocks(shared)
        self.container = switchable
        locks = MountLocks(
            container: BlockingContainerLocks(base: container ?? switchable), holderName: name,
            leaseSeconds: leaseSeconds,
            logger: Logger(label: "syncfs-tests"), monotonic: { [clock] in clock.now },
            onLost: { [lost] report in lost.add(report) })
        locks.start()
    }

    var reportedLost: [LostLock] { lost.all }

    func advance(seconds: UInt64) { clock.advance(seconds * 1_000_000_000) }

    /// Asks for a lock and waits for the answer (at most 10 s; nil if none came).
    func acquire(_ probe: LockProbe, blocking: Bool = false) -> LockOutcome? {
        let answer = AnswerBox<LockOutcome>()
        locks.acquire(probe, blocking: blocking) { answer.set($0) }
        return answer.wait()
    }

    /// Starts a blocking request; its answer lands in the returned box.
    func startWaiting(_ probe: LockProbe) -> (LockWaiter, AnswerBox<LockOutcome>) {
        let answer = AnswerBox<LockOutcome>()
        let waiter = locks.acquire(probe, blocking: true) { answer.set($0) }
        return (waiter, answer)
    }

    func unlock(_ key: LockKey, range: LockRange = .wholeFile) {
        let done = DispatchSemaphore(value: 0)
        locks.unlock(key, range: range) { done.signal() }
        _ = done.wait(timeout: .now() + 10)
    }

    /// One lease round, waited for.
    func keepLeases() {
        let done = DispatchSemaphore(value: 0)
        locks.keepLeases { done.signal() }
        _ = done.wait(timeout: .now() + 10)
    }

    func goOffline(_ offline: Bool = true) { container.offline.store(offline, ordering: .relaxed) }

    func stop() { locks.stop() }
}

/// A monotonic clock that moves only when told.
final class ManualClock: Sendable {
    private let nanoseconds = Atomic<UInt64>(1_000_000_000)
    var now: UInt64 { nanoseconds.load(ordering: .relaxed) }
    func advance(_ by: UInt64) { nanoseconds.add(by, ordering: .relaxed) }
}

/// The lost locks a lock service reported.
final class LostReports: Sendable {
    private let reports = Mutex<[LostLock]>([])
    func add(_ report: LostLock) { reports.withLock { $0.append(report) } }
    var all: [LostLock] { reports.withLock { $0 } }
}

/// An answer that comes later, from another thread.
final class AnswerBox<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func set(_ answer: Value) {
        value.withLock { $0 = answer }
        done.signal()
    }

    var current: Value? { value.withLock { $0 } }

    /// Waits at most `seconds` for the answer.
    func wait(seconds: Double = 10) -> Value? {
        _ = done.wait(timeout: .now() + seconds)
        return current
    }
}
