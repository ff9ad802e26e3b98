import Foundation
import Logging
import SyncBackend
import Synchronization

/// The mount's advisory locks (flock and fcntl), held across every mount of the container
/// (doc/SEMANTICS.md, "Locks"). The FUSE adapter hands it every lock request; one thread
/// (`syncfs-locks`) decides them in order, so the book and the container change together:
///
/// - a request in the way of another local owner's lock is refused (non-blocking) or waits;
/// - otherwise the container is asked (`ContainerLockCalls.claim`, a lease of `leaseSeconds`):
///   granted, the lock is recorded; held elsewhere, it is refused or waits; unreachable (or no
///   answer within `ContainerLockCalls.callDeadline`), it is granted here only (`local only`,
///   claimed later by `LeaseKeeper`); any other failure or a garbled answer refuses it (ENOLCK) —
///   nothing is ever granted on an answer that was not checked;
/// - while the book knows the container unreachable (`LockBook.offlineSince`), requests and
///   unlocks are decided here only, without a call: only `LeaseKeeper`'s rounds try it again;
/// - an unlock (and a close's end of an owner's locks) leaves the book, then the container, and
///   is answered once the container took it (or could not be reached: then later);
/// - waiting requests are tried again after each release on their file here and every
///   `retryInterval` (a holder elsewhere tells no one when it lets go);
/// - `LeaseKeeper` runs every third of the lease (every second while something is not in step).
///
/// No FUSE worker waits: each request is answered from this thread through its callback.
final class MountLocks: Sendable {
    let book: LockBook
    let keeper: LeaseKeeper
    let calls: ContainerLockCalls
    private let logger: Logger
    private let jobs = JobQueue()
    private let worker: Worker
    private let waiting = Mutex<[ObjectIdentifier: LockWaiter]>([:])
    /// This machine's monotonic clock in nanoseconds (a test moves its own).
    private let monotonic: @Sendable () -> UInt64
    static let retryInterval: UInt64 = 250_000_000

    /// `container`: nil when it keeps no locks (every lock is then local only). `holderName`:
    /// this mount's device name, shown to other mounts.
    init(
        container: (any LockCalling)?, holderName: String, leaseSeconds: Int = 30,
        session: LockSession = .random(), logger: Logger,
        monotonic: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        onLost: @escaping @Sendable (LostLock) -> Void
    ) {
        let book = LockBook(session: session, holderName: holderName)
        self.book = book
        calls = ContainerLockCalls(base: container)
        self.logger = logger
        self.monotonic = monotonic
        keeper = LeaseKeeper(
            book: book, calls: calls, leaseSeconds: leaseSeconds, monotonic: monotonic, onLost: onLost)
        worker = Worker("syncfs-locks", wake: { [jobs] in jobs.wake() })
    }

    var session: LockSession { book.session }

    func start() {
        worker.start { [self] worker in run(worker) }
    }

    /// Stops the thread, answers the requests still waiting (`interrupted`), and releases the
    /// session's locks at the container (a daemon killed before this leaves them to expire).
    func stop() {
        worker.stop()
        worker.join()
        for waiter in waiting.withLock({ Array($0.values) }) { waiter.finish(.interrupted) }
        for job in jobs.drain() { job() }
        do throws(ContainerLockCalls.Failure) {
            if !book.snapshot.keys.isEmpty { try calls.releaseAll(session: session) }
        } catch {
            logger.notice("the container's locks of this mount could not be released (they expire): \(error.reason)")
        }
    }

    // MARK: Requests (any thread)

    /// F_SETLK/F_SETLKW or flock: `answer` is called exactly once, from another thread. Returns
    /// the request, to `cancel` when the kernel interrupts it.
    @discardableResult
    func acquire(_ probe: LockProbe, blocking: Bool, answer: @escaping @Sendable (LockOutcome) -> Void)
        -> LockWaiter
    {
        let waiter = LockWaiter(probe: probe, blocking: blocking, answer: answer)
        jobs.add { [self] in attempt(waiter) }
        return waiter
    }

    /// F_UNLCK of `range` (fcntl) or LOCK_UN (flock); `answer` once the container took it.
    func unlock(_ key: LockKey, range: LockRange = .wholeFile, answer: @escaping @Sendable () -> Void = {}) {
        jobs.add { [self] in
            release(key, range: range)
            answer()
        }
    }

    /// Runs a `LeaseKeeper` round now on the lock thread, then `done` (tests; the thread runs
    /// rounds by itself).
    func keepLeases(then done: @escaping @Sendable () -> Void) {
        jobs.add { [self] in
            keeper.keep()
            retryWaiting(on: nil)
            done()
        }
    }

    /// F_GETLK: the lock in the way of `probe`, or nil; `.failure` for a container that failed.
    func test(
        _ probe: LockProbe, answer: @escaping @Sendable (Result<LockConflict?, ContainerLockCalls.Failure>) -> Void
    ) {
        jobs.add { [self] in answer(conflict(for: probe)) }
    }

    // MARK: The lock thread

    private func run(_ worker: Worker) {
        var nextRetry: UInt64 = 0
        var nextKeep = DispatchTime.now().uptimeNanoseconds + keeper.leaseNanoseconds / 3
        // The thread's own schedule runs on the real clock whatever `monotonic` is.
        while !worker.isStopping {
            let wake = waiting.withLock({ $0.isEmpty }) ? nextKeep : min(nextKeep, nextRetry)
            if let job = jobs.next(until: wake) {
                job()
                // A job that found the container unreachable brings the next round closer.
                nextKeep = min(nextKeep, keeper.nextRound(after: DispatchTime.now().uptimeNanoseconds))
                continue
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= nextRetry {
                retryWaiting(on: nil)
                nextRetry = now + Self.retryInterval
            }
            if now >= nextKeep {
                keeper.keep()
                retryWaiting(on: nil)
                nextKeep = keeper.nextRound(after: DispatchTime.now().uptimeNanoseconds)
            }
        }
    }

    private func attempt(_ waiter: LockWaiter) {
        guard waiter.beginTry() else { return remove(waiter) }
        if worker.isStopping {
            remove(waiter)
            return waiter.finish(.interrupted)
        }
        let probe = waiter.probe
        if book.snapshot.localConflict(probe) != nil { return refuseOrWait(waiter) }
        if calls.base != nil && book.offlineSince != nil { return grant(waiter, inStep: false, leaseEnd: nil) }
        let sentAt = monotonic()
        do throws(ContainerLockCalls.Failure) {
            switch try calls.claim(book.snapshot.claim(probe), leaseSeconds: keeper.leaseSeconds) {
            case .granted:
                book.reachable()
                grant(waiter, inStep: true, leaseEnd: sentAt + keeper.leaseNanoseconds)
            case .blocked:
                book.reachable()
                refuseOrWait(waiter)
            }
        } catch {
            switch error {
            case .unreachable(let reason):
                if calls.base != nil && book.offlineSince == nil {
                    logger.notice("the container cannot be reached: locks are granted on this mount only (\(reason))")
                }
                if calls.base != nil { book.unreachable() }
                grant(waiter, inStep: false, leaseEnd: nil)
            case .failed(let reason):
                logger.warning("lock refused: \(reason)")
                book.change { $0.markUnsynced(probe.key) }
                remove(waiter)
                waiter.finish(.failed(reason))
            }
        }
    }

    private func grant(_ waiter: LockWaiter, inStep: Bool, leaseEnd: UInt64?) {
        remove(waiter)
        let recorded = book.change { locks -> Bool in
            let recorded = locks.grant(waiter.probe, inStep: inStep, leaseEnd: leaseEnd)
            // Granted at the container, refused here: the keeper releases it there.
            if !recorded && inStep { locks.markUnsynced(waiter.probe.key) }
            return recorded
        }
        waiter.finish(recorded ? .granted : .failed("this mount holds too many locks"))
    }

    private func refuseOrWait(_ waiter: LockWaiter) {
        guard waiter.blocking else {
            remove(waiter)
            return waiter.finish(.wouldBlock)
        }
        if waiter.keepWaiting() {
            waiting.withLock { $0[ObjectIdentifier(waiter)] = waiter }
        } else {
            remove(waiter)
        }
    }

    private func remove(_ waiter: LockWaiter) {
        _ = waiting.withLock { $0.removeValue(forKey: ObjectIdentifier(waiter)) }
    }

    /// Tries the waiting requests again (those on `fileID`, or all).
    private func retryWaiting(on fileID: FileID?) {
        let due = waiting.withLock { all in all.values.filter { fileID == nil || $0.probe.fileID == fileID } }
        for waiter in due {
            if waiter.isFinished {
                remove(waiter)
            } else {
                attempt(waiter)
            }
        }
    }

    private func release(_ key: LockKey, range: LockRange) {
        let had = !book.snapshot.locks(of: key).isEmpty || book.snapshot.isLocalOnly(key)
        book.change { $0.unlock(key, range: range) }
        guard had, !worker.isStopping else { return }
        if calls.base != nil && book.offlineSince != nil {
            book.change { $0.markUnsynced(key) }
            return retryWaiting(on: key.fileID)
        }
        do throws(ContainerLockCalls.Failure) {
            try calls.unlock(book.snapshot.release(key, range: range))
        } catch {
            if case .unreachable = error, calls.base != nil { book.unreachable() }
            book.change { $0.markUnsynced(key) }
        }
        retryWaiting(on: key.fileID)
    }

    private func conflict(for probe: LockProbe) -> Result<LockConflict?, ContainerLockCalls.Failure> {
        let snapshot = book.snapshot
        if let local = snapshot.localConflict(probe) {
            return .success(LockConflict(mode: local.mode, range: local.range, pid: snapshot.pid(of: local.owner)))
        }
        if book.offlineSince != nil { return .success(nil) }
        do throws(ContainerLockCalls.Failure) {
            let claim = snapshot.claim(probe)
            let other = try calls.locks(on: probe.fileID).locks.first {
                $0.session != snapshot.session && $0.kind == probe.kind && $0.range.overlaps(probe.range)
                    && ($0.mode == .exclusive || probe.mode == .exclusive)
                    && !$0.isHeld(by: claim.session, owner: claim.owner)
            }
            return .success(other.map { LockConflict(mode: $0.mode, range: $0.range, pid: 0) })
        } catch {
            if case .unreachable = error { return .success(nil) }
            return .failure(error)
        }
    }
}

/// The lock thread's work: closures run in order, and a wait that ends at a deadline.
final class JobQueue: Sendable {
    private let condition = NSCondition()
    private let jobs = Mutex<[@Sendable () -> Void]>([])

    func add(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.withLock { $0.append(job) }
        condition.signal()
        condition.unlock()
    }

    /// The next job, or nil once `deadline` (monotonic nanoseconds) passed or `wake` was called.
    func next(until deadline: UInt64) -> (@Sendable () -> Void)? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return job }
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { return nil }
            let seconds = Double(deadline - now) / 1e9
            if !condition.wait(until: Date().addingTimeInterval(seconds)) { return nil }
            if jobs.withLock({ $0.isEmpty }) { return nil }
        }
    }

    func wake() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// The jobs not run yet (at stop: run once more so that every request is answered).
    func drain() -> [@Sendable () -> Void] {
        jobs.withLock { all in
            defer { all.removeAll() }
            return all
        }
    }
}
