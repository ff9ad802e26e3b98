/// Cross-mount locks of the local container (`ContainerLocks`): every mount of it on this machine
/// shares them through `container.db` (`LocalEntryStore+Locks.swift`).
extension LocalContainer: ContainerLocks {
    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.lock(claim, leaseSeconds: leaseSeconds)
        }
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in try entries.unlock(release) }
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.renewLocks(session: session, leaseSeconds: leaseSeconds)
        }
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.releaseLocks(session: session)
        }
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in try entries.locks(on: fileID) }
    }
}
