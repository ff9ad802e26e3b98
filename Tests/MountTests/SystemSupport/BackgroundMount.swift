import Foundation
import Glibc
import TestSupport
import Testing

/// A mount made the way the system makes it — `syncfs-mount mount` in the background, mount(8),
/// the `mount.fuse.syncfs` helper, a systemd unit's command line — with its own temporary
/// container, mount point and state directory. `tearDown` always unmounts (`syncfs-mount
/// unmount`, then lazily) and waits for the daemon to go.
final class BackgroundMount: @unchecked Sendable {
    /// The temporary directory holding everything (/tmp/syncfs-system-XXXXXX).
    let base: String
    let container: String
    let mountpoint: String
    let stateDir: String
    let binary: String

    init(sharedContainer: String? = nil) throws {
        umask(0o022)
        base = try makeTemporaryDirectory("syncfs-system")
        container = sharedContainer ?? base + "/container"
        mountpoint = base + "/mnt"
        stateDir = base + "/state"
        binary = try TestFolder.binaryPath()
        try makeDirectory(mountpoint)
        // A container is made only on request (`init`); the mount commands under test never create one.
        if sharedContainer == nil {
            let made = try runProcess([binary, "init", container], timeout: 60)
            guard made.status == 0 else { throw PosixError(code: EIO, operation: "syncfs-mount init: \(made.output)") }
        }
    }

    /// `mount CONTAINER MOUNTPOINT --state-dir STATE --upload-delay 20` and `extra`, in the background.
    var mountCommand: [String] {
        [binary, "mount", container, mountpoint, "--state-dir", stateDir, "--upload-delay", "20"]
    }

    /// Runs `syncfs-mount ARGUMENTS…`.
    func run(_ arguments: [String], timeout: Double = 60) throws -> (status: Int32, output: String) {
        try runProcess([binary] + arguments, timeout: timeout)
    }

    /// True if the mount point is in /proc/mounts as `fuse.syncfs`.
    var isMounted: Bool {
        TestFolder.mountEntries().contains { $0.mountPoint == mountpoint && $0.type == "fuse.syncfs" }
    }

    /// The mount options /proc/mounts shows for the mount point.
    var kernelOptions: [String] {
        let text = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 3, fields[1] == mountpoint { return fields[3].split(separator: ",").map(String.init) }
        }
        return []
    }

    /// The pid of the daemon serving this mount point (a `syncfs-mount mount … MOUNTPOINT …
    /// --foreground` process), found in /proc.
    func daemonPID() -> pid_t? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = pid_t(entry),
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.contains(mountpoint) && arguments.contains("--foreground") && arguments.contains("mount") {
                return pid
            }
        }
        return nil
    }

    /// Unmounts (if mounted), waits up to 30 s for the daemon to exit (then kills it), removes
    /// `base` unless something is still mounted.
    func tearDown() {
        let pid = daemonPID()
        if isMounted { _ = try? run(["unmount", mountpoint, "--sync-timeout", "5"], timeout: 60) }
        if isMounted { TestFolder.lazyUnmount(mountpoint) }
        if let pid {
            _ = waitUntil(timeout: 30) { kill(pid, 0) != 0 }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        if isMounted {
            Issue.record("tearDown: \(mountpoint) is still mounted; leaving \(base)")
            return
        }
        try? FileManager.default.removeItem(atPath: base)
    }
}

/// Runs `command` with `environment` added to this process's, standard output and error in one
/// string; kills it after `timeout` seconds. Returns (exit code or 128+signal, output).
func runProcess(
    _ command: [String], environment: [String: String], timeout: Double
) throws -> (status: Int32, output: String) {
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    let prefix = ["/usr/bin/env", "-i"] + merged.map { "\($0.key)=\($0.value)" }.sorted()
    return try runProcess(prefix + command, timeout: timeout)
}

/// The helper name mount(8) runs for `-t fuse.syncfs`: a temporary directory with a symlink
/// `mount.fuse.syncfs` pointing at the built binary.
struct HelperLink {
    let directory: String
    var path: String { directory + "/mount.fuse.syncfs" }

    init(binary: String) throws {
        directory = try makeTemporaryDirectory("syncfs-helper")
        try makeSymlink(target: binary, at: directory + "/mount.fuse.syncfs")
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Waits for `pid` (not a child) to be gone; true if it went within `timeout`.
func waitForProcessGone(_ pid: pid_t, timeout: Double) -> Bool {
    waitUntil(timeout: timeout) { kill(pid, 0) != 0 }
}
