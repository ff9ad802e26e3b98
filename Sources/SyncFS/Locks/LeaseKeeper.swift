import Foundation
import SyncBackend

/// Keeps this mount run's locks at the container (doc/SEMANTICS.md, "Locks"): renews the
/// session's leases, claims the locks granted while the container could not be reached, and
/// finds the locks lost. Called by the lock thread (`MountLocks`) only, so nothing else changes
/// the book meanwhile.
///
/// Each round renews the session (`renewLocks`) and compares the answer with the book, owner by
/// owner and file by file (`LockKey`):
/// - in step: the container must still hold every range the book holds, and the lease must not
///   have run out before this round's call was sent (reckoned by this machine's clock from when
///   the last call that granted or renewed it was sent); otherwise the locks are lost;
/// - unsynced (granted or released while offline, or after an unsure answer): each range the
///   book holds is claimed; one held elsewhere makes the key's locks lost; then what the
///   container holds beyond the book is released;
/// - ranges the container holds for the session that the book does not know are released.
/// A round whose renewal fails loses every key whose lease runs out within `expiryMargin`:
/// another mount may take it once the lease ends at the container, answering or not; a key
/// granted here only has no lease there and is kept (claimed once the container answers).
/// Lost locks leave the book, are released at the container, and are reported (`onLost`).
final class LeaseKeeper: Sendable {
    let book: LockBook
    let calls: ContainerLockCalls
    let leaseSeconds: Int
    private let onLost: @Sendable (LostLock) -> Void
    private let monotonic: @Sendable () -> UInt64

    init(
        book: LockBook, calls: ContainerLockCalls, leaseSeconds: Int,
        monotonic: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        onLost: @escaping @Sendable (LostLock) -> Void
    ) {
        self.book = book
        self.calls = calls
        self.leaseSeconds = leaseSeconds
        self.monotonic = monotonic
        self.onLost = onLost
    }

    var leaseNanoseconds: UInt64 { UInt64(leaseSeconds) * 1_000_000_000 }

    /// The rounds' interval while something is not in step or the container does not answer.
    static let catchUpInterval: UInt64 = 1_000_000_000
    /// How long before its lease end (by this machine's clock) a lock whose renewal failed is
    /// lost: the next round may come a `catchUpInterval` and a call's deadline later, and a
    /// second more allows for the two clocks running at different rates.
    static let expiryMargin: UInt64 =
        catchUpInterval + UInt64(ContainerLockCalls.callDeadline.inSeconds * 1e9) + 1_000_000_000

    /// When the next round is due after one that ended at `now`: a third of the lease while every
    /// lock is in step, a second while some are not or the container does not answer.
    func nextRound(after now: UInt64) -> UInt64 {
        let snapshot = book.snapshot
        if calls.base == nil { return now + leaseNanoseconds }
        if snapshot.keys.isEmpty { return now + leaseNanoseconds / 3 }
        if !snapshot.unsynced.isEmpty || book.offlineSince != nil { return now + Self.catchUpInterval }
        return now + leaseNanoseconds / 3
    }

    /// One round (see the type). Does nothing for a container that keeps no locks, nor while the
    /// book holds nothing: then the next request asks the container again, offline or not.
    func keep() {
        let snapshot = book.snapshot
        guard calls.base != nil else { return }
        guard !snapshot.keys.isEmpty else { return book.reachable() }
        let sentAt = monotonic()
        let held: [HeldLock]
        do throws(ContainerLockCalls.Failure) {
            held = try calls.renew(session: snapshot.session, leaseSeconds: leaseSeconds)
        } catch {
            if case .unreachable = error { book.unreachable() }
            loseRunningOut(at: monotonic())
            return
        }
        book.reachable()
        let leaseEnd = sentAt + leaseNanoseconds
        var known: Set<LockKey> = []
        for key in snapshot.keys {
            known.insert(key)
            let theirs = held.filter { $0.fileID == key.fileID && $0.kind == key.kind && $0.owner == key.owner }
            if snapshot.unsynced.contains(key) {
                guard claimAgain(key, theirs: theirs) else { return }
            } else {
                check(key, theirs: theirs, sentAt: sentAt, leaseEnd: leaseEnd)
            }
        }
        // What the container holds for this session that the book does not know at all.
        for lock in held where !known.contains(LockKey(fileID: lock.fileID, kind: lock.kind, owner: lock.owner)) {
            releaseAtContainer(snapshot.release(LockKey(fileID: lock.fileID, kind: lock.kind, owner: lock.owner)))
        }
    }

    /// An in-step key: still held, lease not run out; else lost.
    private func check(_ key: LockKey, theirs: [HeldLock], sentAt: UInt64, leaseEnd: UInt64) {
        let mine = book.snapshot.locks(of: key)
        if let end = book.snapshot.leaseEnds[key], end < sentAt {
            return lose(key, mine, "its lease ran out while the container could not be reached")
        }
        guard Self.covers(theirs, mine) else {
            return lose(key, mine, "the container no longer holds it (its lease ran out)")
        }
        releaseBeyond(key, theirs: theirs, mine: mine)
        book.change { $0.markInStep(key, leaseEnd: leaseEnd) }
    }

    /// Loses every key whose lease ends within `expiryMargin` of `now`, without asking the
    /// container (the lease ends there by itself; a renewal that finds it still held releases it).
    private func loseRunningOut(at now: UInt64) {
        for (key, end) in book.snapshot.leaseEnds where end <= now + Self.expiryMargin {
            lose(
                key, book.snapshot.locks(of: key), "its lease ran out while the container could not be reached",
                releasing: false)
        }
    }

    /// An unsynced key: claims each range the book holds. False if the container stopped
    /// answering (the round ends; the key stays unsynced).
    private func claimAgain(_ key: LockKey, theirs: [HeldLock]) -> Bool {
        let snapshot = book.snapshot
        let mine = snapshot.locks(of: key)
        let sentAt = monotonic()
        if let end = snapshot.leaseEnds[key], end < sentAt {
            lose(key, mine, "its lease ran out while the container could not be reached")
            return true
        }
        for lock in mine {
            let probe = LockProbe(
                fileID: key.fileID, kind: key.kind, mode: lock.mode, range: lock.range, owner: key.owner,
                pid: snapshot.pid(of: key.owner))
            do throws(ContainerLockCalls.Failure) {
                switch try calls.claim(snapshot.claim(probe), leaseSeconds: leaseSeconds) {
                case .granted: continue
                case .blocked(let other):
                    lose(key, mine, "it was granted while offline, and \(Self.describe(other)) holds it")
                    return true
                }
            } catch {
                guard case .unreachable = error else { return true }  // unsure: the next round tries again
                book.unreachable()
                return false
            }
        }
        releaseBeyond(key, theirs: theirs, mine: mine)
        book.change { $0.markInStep(key, leaseEnd: sentAt + leaseNanoseconds) }
        return true
    }

    /// Releases the ranges the container holds for `key` that the book does not.
    private func releaseBeyond(_ key: LockKey, theirs: [HeldLock], mine: [HeldLock]) {
        let beyond = theirs.flatMap { held in
            mine.reduce([held.range]) { pieces, lock in pieces.flatMap { $0.removing(lock.range) } }
        }
        for range in beyond { releaseAtContainer(book.snapshot.release(key, range: range)) }
    }

    /// Releases at the container what the book does not hold. Should the call fail, the next
    /// round finds the lock again in the renewal's answer and releases it then.
    private func releaseAtContainer(_ release: LockRelease) {
        do throws(ContainerLockCalls.Failure) {
            try calls.unlock(release)
        } catch {
            return
        }
    }

    private func lose(_ key: LockKey, _ mine: [HeldLock], _ reason: String, releasing: Bool = true) {
        let pid = book.snapshot.pid(of: key.owner)
        book.change { $0.drop(key) }
        if releasing { releaseAtContainer(book.snapshot.release(key)) }
        guard !mine.isEmpty else { return }
        let lost = LostLock(
            fileID: key.fileID, kind: key.kind, owner: key.owner, pid: pid, locks: mine, reason: reason, at: Date())
        book.recordLost(lost)
        onLost(lost)
    }

    /// Whether the ranges of `theirs` cover every range of `mine` with the same mode.
    static func covers(_ theirs: [HeldLock], _ mine: [HeldLock]) -> Bool {
        mine.allSatisfy { lock in
            var next = lock.range.start
            for held in theirs.filter({ $0.mode == lock.mode }).sorted(by: { $0.range.start < $1.range.start }) {
                guard held.range.start <= next else { break }
                if held.range.end >= lock.range.end { return true }
                if held.range.end >= next { next = held.range.end + 1 }
            }
            return false
        }
    }

    /// "device NAME" for a holder in a message.
    static func describe(_ held: HeldLock) -> String { "device '\(held.holderName)'" }
}

extension LockRange {
    /// What is left of this range without `other`: nothing, one piece or two.
    func removing(_ other: LockRange) -> [LockRange] {
        guard overlaps(other) else { return [self] }
        var pieces: [LockRange] = []
        if other.start > start { pieces.append(LockRange(start: start, end: other.start - 1)) }
        if other.end < end { pieces.append(LockRange(start: other.end + 1, end: end)) }
        return pieces
    }
}
