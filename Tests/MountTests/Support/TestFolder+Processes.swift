import Foundation
import Glibc
import TestSupport

/// Child processes and the mount table, for `TestFolder`.
extension TestFolder {
    /// Waits for `pid` to exit; returns its wait status, or nil on timeout.
    static func waitForExit(_ pid: pid_t, timeout: Double) -> Int32? { ChildProcess.waitForExit(pid, timeout: timeout) }

    /// "exit status N" / "killed by signal N" for a wait status.
    static func describe(_ status: Int32) -> String { ChildProcess.describe(status) }

    /// Whether `path` is a mount point in /proc/mounts.
    static func isMounted(_ path: String) -> Bool {
        mountEntries().contains { $0.mountPoint == path }
    }

    /// The entries of /proc/mounts: (source, mount point, fstype).
    static func mountEntries() -> [(source: String, mountPoint: String, type: String)] {
        let fd = open("/proc/mounts", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        let text = String(decoding: (try? readAll(fd)) ?? [], as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { return nil }
            return (unescape(fields[0]), unescape(fields[1]), String(fields[2]))
        }
    }

    /// /proc/mounts writes space, tab, newline and backslash as \ooo.
    private static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let source = Array(field.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "\\"), index + 3 < source.count,
                let value = UInt8(String(decoding: source[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `fusermount3 -u -z path`, falling back to umount2(MNT_DETACH).
    static func lazyUnmount(_ path: String) {
        let arguments = ["fusermount3", "-u", "-z", path]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        if posix_spawnp(&pid, "fusermount3", nil, &attributes, argv, environ) == 0 {
            _ = waitForExit(pid, timeout: 10)
        }
        if isMounted(path) { _ = umount2(path, Int32(MNT_DETACH)) }
    }

    /// The last `limit` bytes of a file.
    static func tail(of path: String, limit: Int) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "(no log at \(path))" }
        let text = String(decoding: data.suffix(limit), as: UTF8.self)
        return data.count > limit ? "…" + text : text
    }
}
