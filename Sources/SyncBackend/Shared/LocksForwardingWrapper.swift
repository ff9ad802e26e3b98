/// A wrapper of a container that forwards its base's locks through the wrapper's own switch or
/// faults (`admittedLocks`), so lock calls fail, wait and count like every other call (an outage
/// reaches the locks too: the mount then keeps its locks local).
public protocol LocksForwardingWrapper: ContainerLocks {
    /// The base container's locks once this wrapper let the call through; `invalidRequest` if
    /// the base keeps none (`LockForwarding.locks(of:)`).
    func admittedLocks() async throws(ContainerProtocolError) -> any ContainerLocks
}

extension LocksForwardingWrapper {
    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        try await admittedLocks().lock(claim, leaseSeconds: leaseSeconds)
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        try await admittedLocks().unlock(release)
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        try await admittedLocks().renewLocks(session: session, leaseSeconds: leaseSeconds)
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await admittedLocks().releaseLocks(session: session)
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try await admittedLocks().locks(on: fileID)
    }
}

public enum LockForwarding {
    /// `base` as a container that keeps locks, or `invalidRequest` saying it keeps none.
    public static func locks(of base: any Container) throws(ContainerProtocolError) -> any ContainerLocks {
        guard let locks = base as? any ContainerLocks else { throw .invalidRequest("this container keeps no locks") }
        return locks
    }
}
