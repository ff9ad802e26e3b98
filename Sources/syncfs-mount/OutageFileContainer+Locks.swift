import SyncBackend

/// Locks through the outage switch: unreachable while the file exists, like every other call;
/// a base that keeps no locks answers as unreachable too (its mount's locks are local only).
extension OutageFileContainer: ContainerLocks {
    private func lockBase() throws(ContainerProtocolError) -> any ContainerLocks {
        try admit()
        guard let locks = base as? any ContainerLocks else { throw .unavailable("the container keeps no locks") }
        return locks
    }

    func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        try await lockBase().lock(claim, leaseSeconds: leaseSeconds)
    }

    func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        try await lockBase().unlock(release)
    }

    func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError) -> [HeldLock] {
        try await lockBase().renewLocks(session: session, leaseSeconds: leaseSeconds)
    }

    func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await lockBase().releaseLocks(session: session)
    }

    func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try await lockBase().locks(on: fileID)
    }
}
