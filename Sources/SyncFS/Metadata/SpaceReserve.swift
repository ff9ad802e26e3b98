import Glibc
import Logging
import Synchronization

/// Room kept for the state database on the disk that holds it.
///
/// The state directory's disk is shared with the cache files, which a program can fill. When it
/// is full, SQLite cannot append to its WAL ("database or disk is full"), so an unlink, a rename
/// or a mount could not record anything, and the removed file's cache file (removed only once its
/// entry's removal is committed) kept the disk full for good. So the store keeps a private file
/// of `size` preallocated bytes, `reserve` in the state directory (0600): when a commit fails
/// with `SQLITE_FULL` (or the database cannot be opened while the reserve is held) the reserve
/// is deleted and the commit retried once (`MetadataStore`). While it is not held, writes into
/// cache files must leave `size` bytes free (`admits`): the freed room stays the database's, and
/// the kernel's write-back of a full-disk copy cannot take it. It is made again after a commit
/// once the disk has room for it and `margin` more (looked at most once a second).
///
/// Thread safety: `release` and `replenish` are called with the store's connection lock held
/// (one at a time); `isHeld` and `admitting` from any thread. A write admitted while the reserve
/// was held must not land in the room its release frees (the kernel's write-back sends many at
/// once, far more than the reserve): writes run inside `admitting`, and `release` waits for those
/// under way before it deletes the file (`gate`); writes after it see the reserve released.
final class SpaceReserve: Sendable {
    /// 8 MiB: two full WAL cycles of SQLite's default checkpoint (1,000 pages of 4 KiB), so a
    /// full disk still takes thousands of unlinks, renames and mkdirs and a mount
    /// (doc/SEMANTICS.md, "Full disk").
    static let standardSize: Int64 = 8 << 20
    /// Free room, beyond the reserve, before it is made again.
    static let margin: Int64 = 1 << 20

    let path: String
    let size: Int64
    private let logger: Logger?
    private let held = Atomic<Bool>(false)
    /// When `replenish` last looked at the disk (CLOCK_MONOTONIC seconds).
    private let lastLook = Atomic<Int64>(0)
    /// Writes into cache files (shared) against `release` (exclusive).
    private let gate = WriteGate()

    /// The reserve in `directory` (the state directory). Made now if the disk has room; a
    /// reserve left by an earlier mount is taken over.
    init(directory: String, size: Int64 = standardSize, logger: Logger?) {
        path = directory + "/reserve"
        self.size = size
        self.logger = logger
        if Self.existingSize(path) >= size {
            held.store(true, ordering: .releasing)
        } else {
            unlink(path)
            _ = make()
        }
    }

    /// Whether the reserve file is in place.
    var isHeld: Bool { held.load(ordering: .acquiring) }

    /// Whether `count` more bytes may go into a cache file: always while the reserve is held,
    /// else only if the disk keeps the reserve's room free afterwards.
    func admits(_ count: Int) -> Bool {
        if isHeld { return true }
        guard let free = freeBytes() else { return true }
        return free >= size + Int64(count)
    }

    /// Runs `write` (which puts `count` bytes into a cache file) if `admits(count)`, so that a
    /// `release` cannot happen between the decision and the write; nil if not admitted. `write`
    /// must not commit to the store (the store's commit may `release`, which waits for it).
    func admitting<T>(_ count: Int, _ write: () throws -> T) rethrows -> T? {
        try gate.shared { () throws -> T? in
            guard admits(count) else { return nil }
            return try write()
        }
    }

    /// The disk is full: the reserve is not held (released, or never made for want of room), or
    /// less than `margin` is free.
    var diskIsFull: Bool { !isHeld || (freeBytes() ?? .max) < Self.margin }

    /// Deletes the reserve file. True if it was held (the caller may retry what failed).
    @discardableResult
    func release() -> Bool {
        // Writes admitted while it was held end first; later ones see it released.
        let released = gate.exclusive { held.exchange(false, ordering: .acquiringAndReleasing) }
        guard released else { return false }
        unlink(path)
        logger?.warning(
            "the disk holding the state directory is full: released its reserve of \(size) bytes for the state database; writes into files fail until \(size) bytes are free again"
        )
        return true
    }

    /// Makes the reserve again if it is not held and the disk has room (at most one look a second).
    func replenish() {
        guard !isHeld else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        guard lastLook.exchange(Int64(now.tv_sec), ordering: .relaxed) != Int64(now.tv_sec) else { return }
        if make() { logger?.notice("the disk holding the state directory has room again: its reserve is made again") }
    }

    /// Free bytes on the reserve's disk for an unprivileged user (nil: unknown).
    func freeBytes() -> Int64? {
        var info = statvfs()
        let directory = String(path.dropLast("/reserve".count))
        guard statvfs(directory, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Creates the file (never through a symlink or over another file), 0600, and allocates its
    /// blocks; removes it if that fails. True if the reserve is held afterwards.
    private func make() -> Bool {
        guard let free = freeBytes(), free >= size + Self.margin else { return false }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        if fchmod(descriptor, 0o600) != 0 || posix_fallocate(descriptor, 0, off_t(size)) != 0 {
            unlink(path)
            return false
        }
        held.store(true, ordering: .releasing)
        return true
    }

    /// Bytes allocated to a regular file at `path` (not followed if a symlink); 0 otherwise.
    private static func existingSize(_ path: String) -> Int64 {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else { return 0 }
        return min(Int64(info.st_size), Int64(info.st_blocks) * 512)
    }
}
