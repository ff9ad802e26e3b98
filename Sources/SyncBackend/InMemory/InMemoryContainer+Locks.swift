/// Locks of the in-memory container: the reference behaviour of `ContainerLocks`, one
/// `LockTable` of every lock under the container's one lock.
extension InMemoryContainer: ContainerLocks {
    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        let now = WallClock.nanoseconds()
        return try state.withLock { (state: inout State) throws(ContainerProtocolError) -> LockAnswer in
            try state.locks.lock(claim, leaseSeconds: leaseSeconds, now: now)
        }
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        let now = WallClock.nanoseconds()
        try state.withLock { (state: inout State) throws(ContainerProtocolError) in
            try state.locks.unlock(release, now: now)
        }
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        let now = WallClock.nanoseconds()
        return try state.withLock { (state: inout State) throws(ContainerProtocolError) -> [HeldLock] in
            try state.locks.renew(session: session, leaseSeconds: leaseSeconds, now: now)
        }
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        state.withLock { $0.locks.release(session: session) }
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        let now = WallClock.nanoseconds()
        return state.withLock { $0.locks.live(on: fileID, now: now) }
    }
}
