import SyncBackend

/// The container's lock calls (`ContainerLocks`) made synchronously: the lock thread blocks in
/// them. The daemon bridges the async protocol (`BlockingContainerLocks`).
protocol LockCalling: Sendable {
    func lock(_ claim: LockClaim, leaseSeconds: Int) throws(ContainerProtocolError) -> LockAnswer
    func unlock(_ release: LockRelease) throws(ContainerProtocolError)
    func renewLocks(session: LockSession, leaseSeconds: Int) throws(ContainerProtocolError) -> [HeldLock]
    func releaseLocks(session: LockSession) throws(ContainerProtocolError)
    func locks(on fileID: FileID) throws(ContainerProtocolError) -> [HeldLock]
}

/// The container's lock calls as the mount's lock thread makes them, every answer checked
/// before anything is granted on it. An answer that does not fit the
/// question (a lock of another file, family or range, a conflict with this very owner, an expiry
/// that is no time a lease could end) is `garbled`: the request is refused (ENOLCK), never
/// granted, and the owner's state at the container is taken as unknown (reconciled later).
struct ContainerLockCalls: Sendable {
    /// Nil when the container keeps no locks (then every lock is local only).
    let base: (any LockCalling)?
    /// How far the container's clock may be from this machine's and its expiries still be taken.
    static let clockSkewAllowance: Int64 = 86_400 * 1_000_000_000
    /// How long a lock call may take: one that has not answered by then counts as unreachable,
    /// so that a slow or silent container holds up neither the lock thread (its renewals, a
    /// close waiting for its locks' release) nor a FUSE request.
    static let callDeadline: Duration = .seconds(2)

    enum Failure: Error, Equatable {
        /// The container could not be reached (or reached none of its storage): offline.
        case unreachable(String)
        /// It answered, but not with something usable.
        case failed(String)

        var reason: String {
            switch self {
            case .unreachable(let reason), .failed(let reason): return reason
            }
        }
    }

    func claim(_ claim: LockClaim, leaseSeconds: Int, now: Int64 = Clock.nowNanoseconds()) throws(Failure) -> LockAnswer
    {
        let base = try supported()
        let answer = try call { () throws(ContainerProtocolError) in try base.lock(claim, leaseSeconds: leaseSeconds) }
        switch answer {
        case .granted(let expiresAt):
            guard Self.plausible(expiresAt, leaseSeconds: leaseSeconds, now: now) else {
                throw .failed("the container granted a lock with an impossible expiry (\(expiresAt))")
            }
        case .blocked(let held):
            if let problem = Self.problem(with: held, blocking: claim, now: now, leaseSeconds: leaseSeconds) {
                throw .failed("the container's conflicting lock does not fit the request: \(problem)")
            }
        }
        return answer
    }

    func unlock(_ release: LockRelease) throws(Failure) {
        let base = try supported()
        try call { () throws(ContainerProtocolError) in try base.unlock(release) }
    }

    /// The session's locks the container still holds. Garbled if one is not the session's or is
    /// malformed.
    func renew(session: LockSession, leaseSeconds: Int, now: Int64 = Clock.nowNanoseconds()) throws(Failure)
        -> [HeldLock]
    {
        let base = try supported()
        let held = try call { () throws(ContainerProtocolError) in
            try base.renewLocks(session: session, leaseSeconds: leaseSeconds)
        }
        for lock in held {
            if lock.session != session { throw .failed("the container renewed a lock of another session") }
            if let problem = Self.malformation(of: lock, leaseSeconds: leaseSeconds, now: now) {
                throw .failed("the container renewed a malformed lock: \(problem)")
            }
        }
        return held
    }

    func releaseAll(session: LockSession) throws(Failure) {
        let base = try supported()
        try call { () throws(ContainerProtocolError) in try base.releaseLocks(session: session) }
    }

    /// The live locks on `fileID`; those that are not of that file or are malformed are left out
    /// (`dropped` counts them).
    func locks(on fileID: FileID, now: Int64 = Clock.nowNanoseconds()) throws(Failure) -> (
        locks: [HeldLock], dropped: Int
    ) {
        let base = try supported()
        let all = try call { () throws(ContainerProtocolError) in try base.locks(on: fileID) }
        let kept = all.filter {
            $0.fileID == fileID
                && Self.malformation(of: $0, leaseSeconds: LockLimits.leaseSeconds.upperBound, now: now) == nil
        }
        return (kept, all.count - kept.count)
    }

    private func supported() throws(Failure) -> any LockCalling {
        guard let base else { throw .unreachable("the container keeps no locks") }
        return base
    }

    private func call<T>(_ body: () throws(ContainerProtocolError) -> T) throws(Failure) -> T {
        do throws(ContainerProtocolError) {
            return try body()
        } catch {
            switch error {
            case .unavailable, .storageUnavailable: throw .unreachable(error.description)
            default: throw .failed(error.description)
            }
        }
    }

    /// An expiry a lease of `leaseSeconds` granted about `now` could have (allowing
    /// `clockSkewAllowance` between the clocks).
    static func plausible(_ expiresAt: Int64, leaseSeconds: Int, now: Int64) -> Bool {
        let latest = LockTable.expiry(now: now, leaseSeconds: leaseSeconds).addingReportingOverflow(clockSkewAllowance)
        return expiresAt > 0 && expiresAt >= now - clockSkewAllowance
            && (latest.overflow || expiresAt <= latest.partialValue)
    }

    /// Why `lock` is not a lock the container could hold, or nil.
    static func malformation(of lock: HeldLock, leaseSeconds: Int, now: Int64) -> String? {
        if !lock.range.isValid { return "range \(lock.range.start)-\(lock.range.end)" }
        if lock.kind == .flock && lock.range != .wholeFile { return "a flock of a part of the file" }
        if let problem = LockLimits.problem(withHolderName: lock.holderName) { return problem }
        if !plausible(lock.expiresAt, leaseSeconds: leaseSeconds, now: now) { return "expiry \(lock.expiresAt)" }
        return nil
    }

    /// Why `held` cannot be what blocks `claim`, or nil.
    static func problem(with held: HeldLock, blocking claim: LockClaim, now: Int64, leaseSeconds: Int) -> String? {
        if held.fileID != claim.fileID { return "it is on another file" }
        if held.kind != claim.kind { return "it is of the other family" }
        if held.isHeld(by: claim.session, owner: claim.owner) { return "it is the claimant's own" }
        if !held.range.overlaps(claim.range) { return "its range \(held.range) does not overlap \(claim.range)" }
        if held.mode == .shared && claim.mode == .shared { return "two shared locks do not conflict" }
        return malformation(of: held, leaseSeconds: LockLimits.leaseSeconds.upperBound, now: now)
    }
}
