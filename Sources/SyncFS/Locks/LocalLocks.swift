import SyncBackend

/// The locks this mount's processes hold, as the mount knows them: the authority among the
/// mount's own processes (the kernel forwards every lock request to the daemon), and what the
/// container is asked to hold for this mount run (`session`).
///
/// The table is the containers' own algorithm (`LockTable`) with a clock that never moves: a
/// local lock has no lease; it ends by unlock, by close, or with its holder. Each owner's locks
/// on one file (`LockKey`) are either in step with the container (it holds the same ranges for
/// this session, renewed by `LeaseKeeper`) or `unsynced`: granted while the container could not
/// be reached, or after an answer that said nothing sure. `LeaseKeeper` reconciles those.
struct LocalLocks: Sendable {
    let session: LockSession
    let holderName: String
    private(set) var table = LockTable()
    /// Keys the container may not hold as here.
    private(set) var unsynced: Set<LockKey> = []
    /// When the container's lease of each key it was granted runs out, by this machine's monotonic
    /// clock (nanoseconds), reckoned from when the call that granted or renewed it was sent: the
    /// earliest of its ranges' leases. Kept while the key is unsynced (the container may still
    /// hold those ranges until then); none for a key granted here only.
    private(set) var leaseEnds: [LockKey: UInt64] = [:]
    /// The process of each owner, for F_GETLK.
    private var pids: [UInt64: Int32] = [:]

    /// The local table's clock: nothing in it ever expires.
    private static let frozenNow: Int64 = 0
    /// The lease the local table records (any valid value: its clock never reaches it).
    private static let localLease = LockLimits.leaseSeconds.upperBound

    init(session: LockSession, holderName: String) {
        self.session = session
        self.holderName = holderName
    }

    func claim(_ probe: LockProbe) -> LockClaim {
        LockClaim(
            fileID: probe.fileID, kind: probe.kind, mode: probe.mode, range: probe.range, session: session,
            owner: probe.owner, holderName: holderName)
    }

    func release(_ key: LockKey, range: LockRange = .wholeFile) -> LockRelease {
        LockRelease(fileID: key.fileID, kind: key.kind, range: range, session: session, owner: key.owner)
    }

    /// The lock of another local owner in the way of `probe`, if any.
    func localConflict(_ probe: LockProbe) -> HeldLock? {
        var trial = table
        guard
            case .blocked(let held)? = try? trial.lock(claim(probe), leaseSeconds: Self.localLease, now: Self.frozenNow)
        else { return nil }
        return held
    }

    /// Records `probe` as held. False if the table refused it (`LockLimits`' counts).
    mutating func grant(_ probe: LockProbe, inStep: Bool, leaseEnd: UInt64?) -> Bool {
        do throws(ContainerProtocolError) {
            guard case .granted = try table.lock(claim(probe), leaseSeconds: Self.localLease, now: Self.frozenNow)
            else { return false }
        } catch {
            return false  // over `LockLimits`' counts
        }
        pids[probe.owner] = probe.pid
        if inStep, let leaseEnd { leaseEnds[probe.key] = min(leaseEnds[probe.key] ?? leaseEnd, leaseEnd) }
        if !inStep { markUnsynced(probe.key) }
        return true
    }

    /// Removes `range` from the key's locks (the whole flock for a flock).
    mutating func unlock(_ key: LockKey, range: LockRange = .wholeFile) {
        do throws(ContainerProtocolError) {
            try table.unlock(release(key, range: range), now: Self.frozenNow)
        } catch {
            // Only a malformed range fails, and the FUSE adapter refuses those.
        }
        forgetIfEmpty(key)
    }

    /// Drops every lock of `key` (lost).
    mutating func drop(_ key: LockKey) {
        unlock(key)
        unsynced.remove(key)
        leaseEnds[key] = nil
    }

    /// The container may not hold the key's locks as here; the lease end of what it was granted
    /// stays.
    mutating func markUnsynced(_ key: LockKey) {
        unsynced.insert(key)
    }

    /// The key is in step again, its lease running until `leaseEnd`.
    mutating func markInStep(_ key: LockKey, leaseEnd: UInt64) {
        unsynced.remove(key)
        if !locks(of: key).isEmpty { leaseEnds[key] = leaseEnd }
    }

    private mutating func forgetIfEmpty(_ key: LockKey) {
        guard locks(of: key).isEmpty else { return }
        leaseEnds[key] = nil
        if !table.locks.contains(where: { $0.owner == key.owner }) { pids[key.owner] = nil }
    }

    func locks(of key: LockKey) -> [HeldLock] {
        table.locks.filter { $0.fileID == key.fileID && $0.kind == key.kind && $0.owner == key.owner }
    }

    func locks(on fileID: FileID) -> [HeldLock] { table.live(on: fileID, now: Self.frozenNow) }

    /// Every key with a lock, and every unsynced key (one whose locks are gone may still be held
    /// at the container).
    var keys: Set<LockKey> {
        Set(table.locks.map { LockKey(fileID: $0.fileID, kind: $0.kind, owner: $0.owner) }).union(unsynced)
    }

    func pid(of owner: UInt64) -> Int32 { pids[owner] ?? 0 }

    /// Whether any POSIX lock is held (a close must then end its owner's).
    var holdsPosixLocks: Bool { table.locks.contains { $0.kind == .posix } }

    func isLocalOnly(_ key: LockKey) -> Bool { unsynced.contains(key) }
}
