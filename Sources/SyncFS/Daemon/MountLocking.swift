import Foundation
import Logging
import SyncBackend

/// Builds and starts the mount's lock service (`MountLocks`): a new session for this mount run,
/// the container's locks when it keeps them, and what a lost lock does — a `lock-lost` event, a
/// log line, and `status PATH` (`PathStatus.lostLocks`).
enum MountLocking {
    static func start(fileSystem: SyncFileSystem, container: any Container, leaseSeconds: Int, logger: Logger)
        -> MountLocks
    {
        let containerLocks = container as? any ContainerLocks
        if containerLocks == nil {
            logger.notice("this container keeps no locks: flock and fcntl locks hold on this mount only")
        }
        let locks = MountLocks(
            container: containerLocks.map { BlockingContainerLocks(base: $0) }, holderName: fileSystem.deviceName.text,
            leaseSeconds: leaseSeconds,
            logger: logger
        ) { [fileSystem] lost in
            let path = fileSystem.displayPath(of: lost.fileID) ?? lost.fileID.hex
            let message = lostMessage(lost)
            logger.warning("lock lost on \(LogText.line(path)): \(message)")
            fileSystem.changeEvents.publish(
                ChangeEvent(
                    kind: .lockLost, path: path, origin: nil, fileID: lost.fileID, type: .file, message: message))
        }
        fileSystem.xattrs.lockAttribute.setSource { [locks] fileID in locks.attributeLine(on: fileID) }
        locks.start()
        return locks
    }

    /// "posix exclusive 0-99 of process 1234: REASON".
    static func lostMessage(_ lost: LostLock) -> String {
        let ranges = lost.locks.map { "\($0.mode.rawValue) \($0.range)" }.joined(separator: ", ")
        let holder = lost.pid > 0 ? " of process \(lost.pid)" : ""
        return "\(lost.kind.rawValue) \(ranges)\(holder): \(lost.reason)"
    }
}

/// A container's locks called from the lock thread (`Blocking`: never the cooperative pool), or
/// from a thread that answers `status PATH` or `user.syncfs.lock`. Each call waits at most
/// `deadline`: one that has not answered by then counts as unreachable (`unavailable`).
struct BlockingContainerLocks: LockCalling {
    let base: any ContainerLocks
    var deadline: Duration = ContainerLockCalls.callDeadline

    func lock(_ claim: LockClaim, leaseSeconds: Int) throws(ContainerProtocolError) -> LockAnswer {
        try bounded { () async throws(ContainerProtocolError) in try await base.lock(claim, leaseSeconds: leaseSeconds)
        }
    }

    func unlock(_ release: LockRelease) throws(ContainerProtocolError) {
        try bounded { () async throws(ContainerProtocolError) in try await base.unlock(release) }
    }

    func renewLocks(session: LockSession, leaseSeconds: Int) throws(ContainerProtocolError) -> [HeldLock] {
        try bounded { () async throws(ContainerProtocolError) in
            try await base.renewLocks(session: session, leaseSeconds: leaseSeconds)
        }
    }

    func releaseLocks(session: LockSession) throws(ContainerProtocolError) {
        try bounded { () async throws(ContainerProtocolError) in try await base.releaseLocks(session: session) }
    }

    func locks(on fileID: FileID) throws(ContainerProtocolError) -> [HeldLock] {
        try bounded { () async throws(ContainerProtocolError) in try await base.locks(on: fileID) }
    }

    private func bounded<T: Sendable>(_ call: @escaping @Sendable () async throws(ContainerProtocolError) -> T)
        throws(ContainerProtocolError) -> T
    {
        try Blocking.run(
            within: deadline,
            orThrow: .unavailable("the container did not answer a lock call within \(deadline.inSeconds) s"), call)
    }
}

/// One lock on a file as `status PATH` shows it (doc/CLI.md, "status").
public struct PathLock: Codable, Sendable, Equatable {
    /// The device name of the mount whose process holds it.
    public var holder: String
    /// `flock` or `posix`.
    public var kind: String
    /// `shared` or `exclusive`.
    public var mode: String
    /// The first byte and the last (`nil`: to the end of the file, however long it grows).
    public var start: UInt64
    public var end: UInt64?
    /// When the lease ends (RFC 3339, UTC); nil while the lock is held on its mount only.
    public var expires: String?
    /// Granted while the container could not be reached (or keeps no locks): other mounts do
    /// not see it until it is claimed.
    public var localOnly: Bool
    /// Held by a process on the mount that answers.
    public var thisMount: Bool

    init(_ holding: LockHolding) {
        holder = holding.holderName
        kind = holding.kind.rawValue
        mode = holding.mode.rawValue
        start = holding.range.start
        end = holding.range.end == .max ? nil : holding.range.end
        expires = holding.expiresAt.map(LockHolding.time)
        localOnly = holding.localOnly
        thisMount = holding.thisMount
    }
}

/// `status`'s count of the mount's locks.
public struct MountLockCounts: Codable, Sendable, Equatable {
    /// Locks held by the mount's processes (each owner's disjoint range counts once).
    public var held: Int
    /// Of them, granted while the container could not be reached: other mounts do not see them.
    public var localOnly: Int
    /// Locks lost since the mount (`lock-lost`).
    public var lost: Int
}

extension SyncStatus {
    mutating func addLocks(_ locks: MountLocks?) {
        guard let locks else { return }
        let snapshot = locks.book.snapshot
        let held = snapshot.table.locks
        self.locks = MountLockCounts(
            held: held.count,
            localOnly: held.filter { snapshot.isLocalOnly(LockKey(fileID: $0.fileID, kind: $0.kind, owner: $0.owner)) }
                .count,
            lost: locks.book.lostSinceStart)
    }
}

extension PathStatus {
    /// Adds the locks held on the file `ino` and this mount's recent losses on it.
    mutating func addLocks(of ino: InodeNumber, fileSystem: SyncFileSystem, locks: MountLocks?) {
        guard kind == "file", let locks, let fileID = try? fileSystem.fileID(of: ino) else { return }
        self.locks = locks.holdings(on: fileID).map(PathLock.init)
        let lost = locks.book.lost(on: fileID).map { "\(RFC3339.utc($0.at)): \(MountLocking.lostMessage($0))" }
        lostLocks = lost.isEmpty ? nil : lost
    }
}
