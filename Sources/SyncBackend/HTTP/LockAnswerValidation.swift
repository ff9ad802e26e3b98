/// The checks a client makes on a server's lock answers (`ContainerLocks` over HTTP) before its
/// caller sees them; an answer that breaks them is refused (`unavailable`: the server is not
/// speaking this protocol), so nothing a hostile server sends reaches the mount unchecked.
///
/// Expiry times are the server's clock; the client only checks they are plausible (within
/// `maxClockSkew` of its own clock, beyond the lease asked for), never acts on them to the
/// nanosecond: the mount renews on its own schedule.
public enum LockAnswerValidation {
    /// How far apart the client's and the server's clocks may be before an expiry is absurd.
    public static let maxClockSkew: Int64 = 24 * 3600 * 1_000_000_000

    /// Why `answer`, to `claim` with `leaseSeconds`, must be refused (the client's clock at
    /// `now`), or nil. A grant's expiry is about `now + leaseSeconds`; a blocking lock is a valid
    /// lock of the claimed file and kind that conflicts with the claim and is not the claimant's.
    public static func problem(with answer: LockAnswer, to claim: LockClaim, leaseSeconds: Int, now: Int64) -> String? {
        switch answer {
        case .granted(let expiresAt):
            return problem(withExpiry: expiresAt, leaseSeconds: leaseSeconds, now: now)
        case .blocked(let held):
            if let problem = problem(with: held, now: now) { return problem }
            guard held.fileID == claim.fileID, held.kind == claim.kind else {
                return
                    "the lock said to block a \(claim.kind) lock on \(claim.fileID) is a \(held.kind) lock on \(held.fileID)"
            }
            guard !held.isHeld(by: claim.session, owner: claim.owner) else {
                return "the lock said to block the claim is the claimant's own"
            }
            let overlaps = claim.kind == .flock || held.range.overlaps(claim.range)
            guard overlaps, held.mode == .exclusive || claim.mode == .exclusive else {
                return "the lock said to block the claim (\(held.mode) \(held.range)) does not conflict with it"
            }
            return nil
        }
    }

    /// Why `locks`, answered for `renewLocks(session:leaseSeconds:)`, must be refused, or nil:
    /// valid locks of that session, at most `LockLimits.maxLocksPerSession`, each once.
    public static func problem(withRenewed locks: [HeldLock], of session: LockSession, leaseSeconds: Int, now: Int64)
        -> String?
    {
        guard locks.count <= LockLimits.maxLocksPerSession else {
            return "\(locks.count) locks of one session, more than \(LockLimits.maxLocksPerSession)"
        }
        for lock in locks {
            if let problem = problem(with: lock, now: now) { return problem }
            guard lock.session == session else { return "a lock of session \(lock.session) renewed for \(session)" }
        }
        return duplicated(locks)
    }

    /// Why `locks`, answered for `locks(on: fileID)`, must be refused, or nil: valid locks of
    /// that file, at most `LockLimits.maxLocksPerFile`, each once.
    public static func problem(withLocks locks: [HeldLock], on fileID: FileID, now: Int64) -> String? {
        guard locks.count <= LockLimits.maxLocksPerFile else {
            return "\(locks.count) locks on one file, more than \(LockLimits.maxLocksPerFile)"
        }
        for lock in locks {
            if let problem = problem(with: lock, now: now) { return problem }
            guard lock.fileID == fileID else { return "a lock on \(lock.fileID) listed for \(fileID)" }
        }
        return duplicated(locks)
    }

    /// What every lock must be: a well-formed range (a flock: the whole file), a holder name
    /// `LockLimits` accepts, and an expiry no later than the longest lease from now.
    static func problem(with lock: HeldLock, now: Int64) -> String? {
        guard lock.range.isValid, lock.kind == .posix || lock.range == .wholeFile else {
            return "a \(lock.kind) lock on \(lock.fileID) has the range \(lock.range.start)-\(lock.range.end)"
        }
        if let problem = LockLimits.problem(withHolderName: lock.holderName) {
            return "a lock on \(lock.fileID): \(problem)"
        }
        return problem(
            withExpiry: lock.expiresAt, leaseSeconds: LockLimits.leaseSeconds.upperBound, now: now, exact: false)
    }

    /// An expiry must be `now + leaseSeconds` give or take `maxClockSkew` (`exact`), or at most
    /// that (a lock granted or renewed earlier).
    private static func problem(withExpiry expiresAt: Int64, leaseSeconds: Int, now: Int64, exact: Bool = true)
        -> String?
    {
        let expected = LockTable.expiry(now: now, leaseSeconds: leaseSeconds)
        let latest = expected.addingReportingOverflow(maxClockSkew)
        let earliest = (exact ? expected : now).subtractingReportingOverflow(maxClockSkew)
        guard latest.overflow || expiresAt <= latest.partialValue,
            earliest.overflow || expiresAt >= earliest.partialValue
        else {
            return
                "the lease expiry \(expiresAt) is absurd for a lease of \(leaseSeconds) s at \(now) (ns since the epoch)"
        }
        return nil
    }

    private static func duplicated(_ locks: [HeldLock]) -> String? {
        var seen: Set<HeldLock> = []
        for lock in locks where !seen.insert(lock).inserted { return "a lock on \(lock.fileID) is listed twice" }
        return nil
    }
}
