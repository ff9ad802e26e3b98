import SyncBackend

/// Locks across the mounts of a sealed container: forwarded to the container underneath, after
/// the alarm check (`LocksForwardingWrapper`). Locks name file IDs (the opaque entries' own), byte
/// ranges and the holder's device name, which the server sees (doc/CRYPTO.md, "What the server
/// learns"); the ledger does not cover them, so a hostile server can grant conflicting locks (they
/// are advisory: a conflict between two writers is still merged or kept as a conflict copy, never
/// lost). A container underneath that keeps no locks answers every call with `invalidRequest`.
extension SealedContainer: LocksForwardingWrapper {
    public func admittedLocks() async throws(ContainerProtocolError) -> any ContainerLocks {
        try checkAlarm()
        return try LockForwarding.locks(of: inner)
    }
}
