import Foundation
import Glibc
import SyncFS

/// A SyncFS mount whose daemon is gone (killed, crashed): the kernel mount stays and every call
/// on it fails with ENOTCONN, "Transport endpoint is not connected". The CLI names it and the fix
/// instead of a bare errno.
enum DeadMount {
    /// The SyncFS mount point at or above `path` whose daemon is gone, if any. Only mount points of
    /// type `fuse.syncfs` in /proc/self/mounts are asked (one `statvfs` each).
    static func enclosing(_ path: String) -> String? {
        let absolute = (absolutePath(path) as NSString).standardizingPath
        return SyncFSMounts.current().mounts.map(\.mountpoint).filter { mountpoint in
            absolute == mountpoint || absolute.hasPrefix(mountpoint == "/" ? "/" : mountpoint + "/")
        }.sorted { $0.count > $1.count }.first { Unmounter.isStaleMount($0) }
    }

    /// What happened and what fixes it (exit 69, EX_UNAVAILABLE).
    static func error(_ mountpoint: String) -> MountError {
        MountError(
            .fuseUnavailable,
            "\(mountpoint): the SyncFS daemon of this mount is gone (Transport endpoint is not connected); "
                + "nothing written before it stopped is lost. Mount it again with `syncfs-mount mount CONTAINER "
                + "\(mountpoint)` (the same command as before: it clears the dead mount and carries on), or "
                + "`systemctl restart` its unit if systemd runs it; `syncfs-mount unmount \(mountpoint)` removes it.")
    }

    /// Throws `error` if `path` is in a dead mount.
    static func check(_ path: String) throws(MountError) {
        if let dead = enclosing(path) { throw error(dead) }
    }
}
