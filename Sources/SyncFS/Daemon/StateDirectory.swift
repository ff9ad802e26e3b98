import Foundation
import Glibc
import SyncBackend

/// A mount's state directory: `state.db` (SQLite), `cache/` (content), `lock`, `syncfs.log`.
///
/// One daemon at a time: `lock` is held with `flock` for the daemon's life, so a second daemon
/// on the same state fails fast, and a killed daemon's lock is released by the kernel.
public struct StateDirectory: Sendable {
    public let path: String
    public var databasePath: String { path + "/state.db" }
    var cachePath: String { path + "/cache" }
    public var logPath: String { path + "/syncfs.log" }

    public init(path: String) { self.path = path }

    /// The default location: `$XDG_STATE_HOME/syncfs/<mount name>-<hash>` (or
    /// `~/.local/state/syncfs/…`; for root `/var/lib/syncfs/…`, see `defaultBase`), one per
    /// (container, mount point) pair.
    public static func defaultPath(container: String, mountpoint: String) -> String {
        let environment = ProcessInfo.processInfo.environment
        let name = (mountpoint as NSString).lastPathComponent.filter { $0.isLetter || $0.isNumber || $0 == "-" }
        let key = stableHash(container + "\u{0}" + mountpoint)
        let leaf = "/syncfs/" + (name.isEmpty ? "mount" : name) + "-" + String(key, radix: 16)
        if let legacy = legacyRootBase(environment: environment), access(legacy + leaf, F_OK) == 0 {
            return legacy + leaf
        }
        return defaultBase(environment: environment) + leaf
    }

    /// Where new default state directories live (`defaultBase` + `/syncfs`); `syncfs-mount list`
    /// scans it (`StateDirectoryScan`).
    public static var defaultRoot: String {
        defaultBase(environment: ProcessInfo.processInfo.environment) + "/syncfs"
    }

    /// FNV-1a, 64 bits: stable across runs (Swift's `hashValue` is seeded per process).
    static func stableHash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// Creates the directory (and missing parents) mode 0700, or makes an existing one private:
    /// this user's is tightened to 0700 (with its log and database files), another user's is
    /// refused (it could plant a database or read ours). See doc/FORMATS.md, "Permissions".
    public func create() throws(MountError) {
        do throws(PrivateFiles.Refusal) {
            try PrivateFiles.directory(path, ownership: .mine)
            for file in [logPath, path + "/lock"] { try PrivateFiles.tightenFile(file) }
            for directory in [cachePath, cachePath + "/tmp"] where access(directory, F_OK) == 0 {
                try PrivateFiles.directory(directory, ownership: .mine, followSymlink: false)
            }
        } catch {
            throw MountError(.cannotCreate, "cannot use the state directory: \(error)")
        }
    }

    /// Takes the daemon lock; returns the descriptor to keep open for the daemon's life.
    public func lock() throws(MountError) -> Int32 {
        let fd = open(path + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw MountError(.cannotCreate, "cannot open \(path)/lock: \(String(cString: strerror(errno)))")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = LockHolder.describe(lockedFile: fd) ?? "another syncfs-mount daemon"
            close(fd)
            throw MountError(.busy, "the state directory \(path) is in use by \(holder)")
        }
        return fd
    }
}
