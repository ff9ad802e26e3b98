import CFuse
import Glibc
import SyncBackend

// Trampolines for advisory locks (`MountLocks`, doc/SEMANTICS.md "Locks"). Set only with a lock
// service; libfuse then announces FUSE_CAP_POSIX_LOCKS and FUSE_CAP_FLOCK_LOCKS and the kernel
// forwards every lock request of every process here. Each is answered later, from the lock
// thread (`PendingLock`): no worker waits for the container or for another holder.

func fuseGetlk(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?,
    _ lock: UnsafeMutablePointer<flock>?
) {
    guard let req, let lock, let info else { return replyErrno(req, EINVAL) }
    let context = FuseContext.of(req)
    guard let locks = context.locks else { return replyErrno(req, ENOSYS) }
    let asked = lock.pointee
    guard let mode = lockMode(asked.l_type), let range = lockRange(asked) else { return replyErrno(req, EINVAL) }
    let probe: LockProbe
    do throws(FSError) {
        probe = LockProbe(
            fileID: try lockedFileID(ino, context), kind: .posix, mode: mode, range: range,
            owner: info.pointee.lock_owner, pid: asked.l_pid)
    } catch {
        return replyError(req, error)
    }
    let pending = PendingLock.start(req, interruptible: false, in: context.pendingLocks)
    locks.test(probe) { result in
        switch result {
        case .success(let conflict):
            var answer = flockAnswer(conflict, asked: asked)
            pending.answer { fuse_reply_lock($0, &answer) }
        case .failure:
            pending.answer(errno: ENOLCK)
        }
    }
}

func fuseSetlk(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?,
    _ lock: UnsafeMutablePointer<flock>?, _ sleep: Int32
) {
    guard let req, let lock, let info else { return replyErrno(req, EINVAL) }
    let asked = lock.pointee
    guard let range = lockRange(asked) else { return replyErrno(req, EINVAL) }
    let type = Int32(asked.l_type)
    let mode: LockMode? = type == F_UNLCK ? nil : lockMode(asked.l_type)
    if type != F_UNLCK && mode == nil { return replyErrno(req, EINVAL) }
    lockOrUnlock(
        req, ino, kind: .posix, mode: mode, range: range, owner: info.pointee.lock_owner, pid: asked.l_pid,
        blocking: sleep != 0)
}

func fuseFlock(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?, _ op: Int32) {
    guard let req, let info else { return replyErrno(req, EINVAL) }
    let mode: LockMode?
    switch op & ~LOCK_NB {
    case LOCK_SH: mode = .shared
    case LOCK_EX: mode = .exclusive
    case LOCK_UN: mode = nil
    default: return replyErrno(req, EINVAL)
    }
    let pid = fuse_req_ctx(req)?.pointee.pid ?? 0
    lockOrUnlock(
        req, ino, kind: .flock, mode: mode, range: .wholeFile, owner: info.pointee.lock_owner, pid: pid,
        blocking: op & LOCK_NB == 0)
}

/// A close (FLUSH, on every close of a descriptor): ends the closing process's POSIX locks on
/// the file, as closing any descriptor of a file does. Answered at once unless the mount holds
/// a POSIX lock of that owner on that file: one atomic load while it holds none at all, else the
/// handle's file ID and a look in the book (no tree lookup).
func fuseFlush(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.of(req)
    guard let req, let info, let locks = context.locks, locks.book.holdsPosixLocks,
        let handle = peekHandle(info, as: OpenFile.self)
    else { return replyErrno(req, 0) }
    let key = LockKey(fileID: handle.node.fileID, kind: .posix, owner: info.pointee.lock_owner)
    guard locks.book.holds(key) else { return replyErrno(req, 0) }
    let pending = PendingLock.start(req, interruptible: false, in: context.pendingLocks)
    locks.unlock(key) { pending.answer(errno: 0) }
}

/// The last close of an open file that held a flock (FUSE_RELEASE_FLOCK_UNLOCK): ends it. The
/// kernel does not wait for this.
func releaseFlock(_ ino: fuse_ino_t, owner: UInt64, _ context: FuseContext) {
    guard let locks = context.locks, let fileID = try? lockedFileID(ino, context) else { return }
    locks.unlock(LockKey(fileID: fileID, kind: .flock, owner: owner))
}

private func lockOrUnlock(
    _ req: fuse_req_t, _ ino: fuse_ino_t, kind: LockKind, mode: LockMode?, range: LockRange, owner: UInt64,
    pid: Int32, blocking: Bool
) {
    let context = FuseContext.of(req)
    guard let locks = context.locks else { return replyErrno(req, ENOSYS) }
    let fileID: FileID
    do throws(FSError) {
        fileID = try lockedFileID(ino, context)
    } catch {
        return replyError(req, error)
    }
    guard let mode else {
        let pending = PendingLock.start(req, interruptible: false, in: context.pendingLocks)
        return locks.unlock(LockKey(fileID: fileID, kind: kind, owner: owner), range: range) {
            pending.answer(errno: 0)
        }
    }
    let probe = LockProbe(fileID: fileID, kind: kind, mode: mode, range: range, owner: owner, pid: pid)
    let pending = PendingLock.start(req, interruptible: blocking, in: context.pendingLocks)
    let waiter = locks.acquire(probe, blocking: blocking) { outcome in pending.answer(errno: outcome.errno) }
    pending.onInterrupt { waiter.cancel() }
}

/// The file's stable identity (locks follow it, not the inode number).
private func lockedFileID(_ ino: fuse_ino_t, _ context: FuseContext) throws(FSError) -> FileID {
    try context.fileSystem.live.transact { tree throws(FSError) in
        let node = try tree.node(inode(ino))
        guard node.kind == .file else { throw .invalidArgument }
        return node.fileID
    }
}

private func lockMode(_ type: Int16) -> LockMode? {
    switch Int32(type) {
    case F_RDLCK: return .shared
    case F_WRLCK: return .exclusive
    default: return nil
    }
}

/// The bytes a `struct flock` from libfuse names (`l_whence` is SEEK_SET; `l_len` 0: to the end
/// of the file, however long it grows); nil if malformed.
private func lockRange(_ lock: flock) -> LockRange? {
    guard lock.l_start >= 0, lock.l_len >= 0 else { return nil }
    let start = UInt64(lock.l_start)
    if lock.l_len == 0 { return LockRange(start: start, end: .max) }
    let (end, overflow) = start.addingReportingOverflow(UInt64(lock.l_len) - 1)
    return LockRange(start: start, end: overflow ? .max : end)
}

/// F_GETLK's answer: `asked` with F_UNLCK when nothing is in the way, else the lock in the way
/// (bytes past the largest offset the kernel takes read as "to the end of the file").
private func flockAnswer(_ conflict: LockConflict?, asked: flock) -> flock {
    var answer = asked
    guard let conflict else {
        answer.l_type = Int16(F_UNLCK)
        return answer
    }
    answer.l_type = Int16(conflict.mode == .exclusive ? F_WRLCK : F_RDLCK)
    answer.l_whence = Int16(SEEK_SET)
    let largest = UInt64(Int64.max)
    answer.l_start = off_t(min(conflict.range.start, largest))
    answer.l_len =
        conflict.range.end >= largest ? 0 : off_t(conflict.range.end - min(conflict.range.start, largest) + 1)
    answer.l_pid = conflict.pid
    return answer
}

extension LockOutcome {
    /// What the kernel is told: EAGAIN (EWOULDBLOCK, the same on Linux) for a lock held
    /// elsewhere, EINTR for an interrupted wait, ENOLCK when the container failed.
    var errno: Int32 {
        switch self {
        case .granted: return 0
        case .wouldBlock: return EAGAIN
        case .interrupted: return EINTR
        case .failed: return ENOLCK
        }
    }
}

/// Answers `req` with `code` (0: success).
private func replyErrno(_ req: fuse_req_t?, _ code: Int32) {
    fuse_reply_err(req, code)
}
