import SyncBackend

/// Locks across the mounts of a sealed container: forwarded to the container underneath. Locks
/// name file IDs (the opaque entries' own), byte ranges and the holder's device name, which the
/// server sees (doc/CRYPTO.md, "What the server learns"); the ledger does not cover them, so a
/// hostile server can grant conflicting locks (they are advisory: a conflict between two writers
/// is still merged or kept as a conflict copy, never lost). A container underneath that keeps no
/// locks answers every call with `invalidRequest`.
extension SealedContainer: ContainerLocks {
    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        try checkAlarm()
        return try await innerLocks().lock(claim, leaseSeconds: leaseSeconds)
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        try await innerLocks().unlock(release)
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        try await innerLocks().renewLocks(session: session, leaseSeconds: leaseSeconds)
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await innerLocks().releaseLocks(session: session)
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try await innerLocks().locks(on: fileID)
    }

    private func innerLocks() throws(ContainerProtocolError) -> any ContainerLocks {
        guard let locks = inner as? any ContainerLocks else {
            throw .invalidRequest("the container under this encrypted one keeps no locks")
        }
        return locks
    }
}
