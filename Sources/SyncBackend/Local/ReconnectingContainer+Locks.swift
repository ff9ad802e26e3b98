/// The locks of the container at the path, when it can be reached (the same looks and failures
/// as every other call: `unavailable` while it is away).
extension ReconnectingContainer: ContainerLocks {
    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        try await forward { container throws(ContainerProtocolError) in
            try await container.lock(claim, leaseSeconds: leaseSeconds)
        }
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        try await forward { container throws(ContainerProtocolError) in try await container.unlock(release) }
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        try await forward { container throws(ContainerProtocolError) in
            try await container.renewLocks(session: session, leaseSeconds: leaseSeconds)
        }
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await forward { container throws(ContainerProtocolError) in
            try await container.releaseLocks(session: session)
        }
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try await forward { container throws(ContainerProtocolError) in try await container.locks(on: fileID) }
    }
}
