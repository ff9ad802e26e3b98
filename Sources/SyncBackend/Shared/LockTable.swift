/// The lock algorithm of every container (`ContainerLocks`), as a value: a set of held locks and
/// the operations on it, at a given `now` (the container's clock, nanoseconds). Pure: a backend
/// loads the rows the call concerns (one file's locks for `lock`/`unlock`, one session's for
/// `renew`), applies the table, and writes back `difference(from:)` in one transaction.
///
/// Every operation first drops the locks whose lease expired at `now`; they show as removed in
/// `difference(from:)`, so a backend deletes them lazily. Within the table, one owner's locks of
/// one kind on one file never overlap, and touching ones of one mode are merged (as fcntl keeps
/// them), so `(fileID, kind, session, owner, range.start)` identifies a lock.
public struct LockTable: Hashable, Sendable {
    public private(set) var locks: [HeldLock]

    public init(_ locks: [HeldLock] = []) { self.locks = locks }

    /// How many locks the container holds outside this table, for the limits of `LockLimits` (a
    /// table of one file's locks does not see the others). A backend deletes the container's
    /// expired leases before it counts, so the count is of stored rows and bounds the table.
    public struct Elsewhere: Hashable, Sendable {
        /// The claiming session's locks on other files.
        public var sessionLocks: Int
        /// Every lock on other files.
        public var containerLocks: Int

        public init(sessionLocks: Int, containerLocks: Int) {
            self.sessionLocks = sessionLocks
            self.containerLocks = containerLocks
        }

        public static let none = Elsewhere(sessionLocks: 0, containerLocks: 0)
    }

    /// Grants `claim` unless another holder's live lock conflicts (see `ContainerLocks`). A grant
    /// that adds locks is refused (`invalidRequest`) when it would pass `LockLimits`' counts.
    public mutating func lock(
        _ claim: LockClaim, leaseSeconds: Int, now: Int64, elsewhere: Elsewhere = .none
    ) throws(ContainerProtocolError) -> LockAnswer {
        let lease = try LockLimits.lease(leaseSeconds)
        let claim = try Self.checked(claim)
        dropExpired(now: now)
        if let conflict = Self.ordered(locks.filter { Self.conflicts($0, with: claim) }).first {
            return .blocked(by: conflict)
        }
        let expiresAt = Self.expiry(now: now, leaseSeconds: lease)
        var next = self
        next.subtract(claim.range, fileID: claim.fileID, kind: claim.kind, session: claim.session, owner: claim.owner)
        next.insertMerging(
            HeldLock(
                fileID: claim.fileID, kind: claim.kind, mode: claim.mode, range: claim.range, session: claim.session,
                owner: claim.owner, holderName: claim.holderName, expiresAt: expiresAt))
        if next.locks.count > locks.count {
            let sessionTotal = next.locks.count(where: { $0.session == claim.session }) + elsewhere.sessionLocks
            guard sessionTotal <= LockLimits.maxLocksPerSession else {
                throw .invalidRequest("a session holds at most \(LockLimits.maxLocksPerSession) locks")
            }
            guard next.locks.count(where: { $0.fileID == claim.fileID }) <= LockLimits.maxLocksPerFile else {
                throw .invalidRequest("a file holds at most \(LockLimits.maxLocksPerFile) locks")
            }
            guard next.locks.count + elsewhere.containerLocks <= LockLimits.maxLocksPerContainer else {
                throw .invalidRequest("a container holds at most \(LockLimits.maxLocksPerContainer) locks")
            }
        }
        self = next
        return .granted(expiresAt: expiresAt)
    }

    /// Removes `release.range` from the owner's locks of that kind (a flock: the owner's flock).
    public mutating func unlock(_ release: LockRelease, now: Int64) throws(ContainerProtocolError) {
        let range = try Self.checkedRange(release.range, kind: release.kind)
        dropExpired(now: now)
        subtract(range, fileID: release.fileID, kind: release.kind, session: release.session, owner: release.owner)
    }

    /// Extends the session's live leases to `now + leaseSeconds`; answers the session's locks.
    public mutating func renew(
        session: LockSession, leaseSeconds: Int, now: Int64
    ) throws(ContainerProtocolError) -> [HeldLock] {
        let expiresAt = Self.expiry(now: now, leaseSeconds: try LockLimits.lease(leaseSeconds))
        dropExpired(now: now)
        for index in locks.indices where locks[index].session == session { locks[index].expiresAt = expiresAt }
        return Self.ordered(locks.filter { $0.session == session })
    }

    /// Drops every lock of the session.
    public mutating func release(session: LockSession) {
        locks.removeAll { $0.session == session }
    }

    /// The live locks on a file, ordered by kind, range start, session, owner.
    public func live(on fileID: FileID, now: Int64) -> [HeldLock] {
        Self.ordered(locks.filter { $0.fileID == fileID && $0.isLive(at: now) })
    }

    /// Drops the locks whose lease expired at `now`.
    public mutating func dropExpired(now: Int64) {
        locks.removeAll { !$0.isLive(at: now) }
    }

    /// What changed since `original`: the locks to delete and those to insert (a lock whose
    /// lease or holder name changed is both).
    public func difference(from original: LockTable) -> (removed: [HeldLock], added: [HeldLock]) {
        let before = Set(original.locks)
        let after = Set(locks)
        return (
            Self.ordered(original.locks.filter { !after.contains($0) }),
            Self.ordered(locks.filter { !before.contains($0) })
        )
    }

    /// `locks` ordered by file, kind, range start, session, owner.
    public static func ordered(_ locks: [HeldLock]) -> [HeldLock] {
        locks.sorted {
            ($0.fileID.high, $0.fileID.low, $0.kind, $0.range.start, $0.session, $0.owner)
                < ($1.fileID.high, $1.fileID.low, $1.kind, $1.range.start, $1.session, $1.owner)
        }
    }

    /// `now + leaseSeconds` in nanoseconds, saturating.
    public static func expiry(now: Int64, leaseSeconds: Int) -> Int64 {
        let (sum, overflow) = now.addingReportingOverflow(Int64(leaseSeconds) * 1_000_000_000)
        return overflow ? .max : sum
    }

    /// The claim with its range as stored (the whole file for a flock), or `invalidRequest`.
    public static func checked(_ claim: LockClaim) throws(ContainerProtocolError) -> LockClaim {
        if let problem = LockLimits.problem(withHolderName: claim.holderName) { throw .invalidRequest(problem) }
        var claim = claim
        claim.range = try checkedRange(claim.range, kind: claim.kind)
        return claim
    }

    public static func checkedRange(_ range: LockRange, kind: LockKind) throws(ContainerProtocolError) -> LockRange {
        if kind == .flock { return .wholeFile }
        guard range.isValid else {
            throw .invalidRequest("lock range \(range.start)-\(range.end) ends before it starts")
        }
        return range
    }

    private static func conflicts(_ held: HeldLock, with claim: LockClaim) -> Bool {
        held.fileID == claim.fileID && held.kind == claim.kind && !held.isHeld(by: claim.session, owner: claim.owner)
            && held.range.overlaps(claim.range) && (held.mode == .exclusive || claim.mode == .exclusive)
    }

    /// Cuts `range` out of the owner's locks of `kind` on `fileID`, keeping the pieces around it.
    private mutating func subtract(
        _ range: LockRange, fileID: FileID, kind: LockKind, session: LockSession, owner: UInt64
    ) {
        var kept: [HeldLock] = []
        for lock in locks {
            guard lock.fileID == fileID, lock.kind == kind, lock.isHeld(by: session, owner: owner),
                lock.range.overlaps(range)
            else {
                kept.append(lock)
                continue
            }
            if lock.range.start < range.start {
                var before = lock
                before.range = LockRange(start: lock.range.start, end: range.start - 1)
                kept.append(before)
            }
            if lock.range.end > range.end {
                var after = lock
                after.range = LockRange(start: range.end + 1, end: lock.range.end)
                kept.append(after)
            }
        }
        locks = kept
    }

    /// Adds `lock`, merged with the owner's touching locks of its kind and mode on its file (the
    /// merged lock keeps the later expiry and the newest holder name).
    private mutating func insertMerging(_ lock: HeldLock) {
        var merged = lock
        locks.removeAll { other in
            guard other.fileID == lock.fileID, other.kind == lock.kind, other.mode == lock.mode,
                other.isHeld(by: lock.session, owner: lock.owner), other.range.touches(merged.range)
            else { return false }
            merged.range = LockRange(
                start: min(merged.range.start, other.range.start), end: max(merged.range.end, other.range.end))
            merged.expiresAt = max(merged.expiresAt, other.expiresAt)
            return true
        }
        locks.append(merged)
    }
}
