import SyncBackend

/// The base container's locks, through the same faults as every other call (operation `locks`);
/// a base that keeps no locks answers `invalidRequest` saying so.
extension FaultInjectingContainer: LocksForwardingWrapper {
    public func admittedLocks() async throws(ContainerProtocolError) -> any ContainerLocks {
        try await admit(.locks)
        return try LockForwarding.locks(of: base)
    }
}
