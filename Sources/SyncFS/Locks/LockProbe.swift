import SyncBackend

/// One lock request of a process on this mount, as the kernel sent it: which file, which family,
/// which bytes, and whose (`owner`: the kernel's lock owner — an open file for a flock, a
/// process's descriptor table for fcntl locks). `pid` is the requester's, shown by F_GETLK.
struct LockProbe: Sendable, Hashable {
    var fileID: FileID
    var kind: LockKind
    var mode: LockMode
    /// Ignored for a flock (the whole file).
    var range: LockRange
    var owner: UInt64
    var pid: Int32

    init(fileID: FileID, kind: LockKind, mode: LockMode, range: LockRange = .wholeFile, owner: UInt64, pid: Int32) {
        self.fileID = fileID
        self.kind = kind
        self.mode = mode
        self.range = kind == .flock ? .wholeFile : range
        self.owner = owner
        self.pid = pid
    }

    /// The owner's locks of this family on this file.
    var key: LockKey { LockKey(fileID: fileID, kind: kind, owner: owner) }
}

/// One owner's locks of one family on one file: the unit the mount claims, reconciles and
/// loses at the container.
struct LockKey: Sendable, Hashable {
    var fileID: FileID
    var kind: LockKind
    var owner: UInt64
}

/// How a lock request ended, as the kernel is told.
enum LockOutcome: Sendable, Equatable {
    case granted
    /// Held by someone else (non-blocking request): EAGAIN (= EWOULDBLOCK).
    case wouldBlock
    /// The wait was interrupted by a signal: EINTR (the kernel restarts it for `SA_RESTART`).
    case interrupted
    /// The container answered wrongly or failed (not for being unreachable): ENOLCK.
    case failed(String)
}

/// What F_GETLK answers: nothing in the way, or one lock in the way (`pid` 0 for a holder on
/// another mount).
struct LockConflict: Sendable, Equatable {
    var mode: LockMode
    var range: LockRange
    var pid: Int32
}
