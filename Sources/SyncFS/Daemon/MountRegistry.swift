import Foundation
import Glibc

/// Where a running daemon says which mount point it serves, so `syncfs-mount unmount` can wait
/// for that daemon to finish: `$XDG_RUNTIME_DIR/syncfs/mounts/<hash>.pid` (or `/tmp/syncfs-UID/…`).
public enum MountRegistry {
    static var directory: String {
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        return (runtime.map { $0 + "/syncfs" } ?? "/tmp/syncfs-\(getuid())") + "/mounts"
    }

    static func file(for mountpoint: String) -> String {
        directory + "/" + String(StateDirectory.stableHash(mountpoint), radix: 16) + ".pid"
    }

    /// The daemon's control socket (see `ControlServer`).
    public static func socketPath(for mountpoint: String) -> String {
        directory + "/" + String(StateDirectory.stableHash(mountpoint), radix: 16) + ".sock"
    }

    public static func register(mountpoint: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? "\(getpid())\n".write(toFile: file(for: mountpoint), atomically: true, encoding: .utf8)
    }

    public static func unregister(mountpoint: String) {
        unlink(file(for: mountpoint))
    }

    /// The pid of the daemon serving `mountpoint`, if one registered and is still alive.
    public static func daemon(of mountpoint: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: file(for: mountpoint), encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), kill(pid, 0) == 0
        else { return nil }
        return pid
    }
}
