import Foundation
import Glibc

/// Who holds the `flock` on a file, for a message: the process (from /proc/locks, which takes no
/// lock) and, for a mount daemon, what it mounts (from its command line).
enum LockHolder {
    /// "the syncfs-mount daemon (PID 1234) mounting CONTAINER at MOUNTPOINT" or "process 1234
    /// (COMMAND LINE)" for the holder of the lock on the file open as `fd`; nil if not found.
    static func describe(lockedFile fd: Int32) -> String? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let key = StateDirectoryScan.DeviceInode(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        // The lock was just found held: a holder missing from /proc/locks is a read that raced the
        // list's changes, or a holder that just let go; a few more reads tell them apart.
        var found: Int32?
        for attempt in 0..<5 where found == nil {
            if attempt > 0 { usleep(20_000) }
            found = StateDirectoryScan.flockHolders()[key]
        }
        guard let pid = found else { return nil }
        let arguments = commandLine(of: pid)
        if let mount = arguments.firstIndex(of: "mount"), arguments.count > mount + 2 {
            let container = printable(arguments[mount + 1])
            let mountpoint = printable(arguments[mount + 2])
            return "the syncfs-mount daemon (PID \(pid)) mounting \(container) at \(mountpoint); "
                + "`syncfs-mount unmount \(mountpoint)` stops it"
        }
        let shown = arguments.isEmpty ? "" : " (\(printable(arguments.joined(separator: " "))))"
        return "process \(pid)\(shown)"
    }

    /// `text` from another process's command line, one printable line.
    private static func printable(_ text: String) -> String { DeviceName.printable(text, maxBytes: 4096) }

    /// The arguments of process `pid` (/proc/PID/cmdline), or none.
    private static func commandLine(of pid: Int32) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }
}
