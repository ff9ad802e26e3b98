import SyncBackend

/// The base's locks, through the same switch as every other call: during an outage lock calls
/// fail `unavailable` (the mount's locks are then local only).
extension OutageFileContainer: LocksForwardingWrapper {
    func admittedLocks() async throws(ContainerProtocolError) -> any ContainerLocks {
        try admit()
        return try LockForwarding.locks(of: base)
    }
}
