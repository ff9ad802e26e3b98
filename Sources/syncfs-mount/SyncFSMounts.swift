import Foundation
import Glibc
import SyncBackend

/// The SyncFS mounts of this mount namespace, from /proc/self/mounts (type `fuse.syncfs`; the
/// source is `syncfs:CONTAINER`, the daemon's file system name).
struct SyncFSMounts {
    struct Mount: Equatable {
        let mountpoint: String
        /// The container as the daemon was given it (a local path or a server URL).
        let container: String

        /// Whether this mount's container is `container` (the same text, or for local
        /// containers the same container ID).
        func holds(_ container: String) -> Bool {
            if self.container == container { return true }
            guard !container.contains("://"), !self.container.contains("://"),
                let mine = LocalContainer.markerID(at: self.container)
            else { return false }
            return LocalContainer.markerID(at: container) == mine
        }
    }

    let mounts: [Mount]

    static func current() -> SyncFSMounts {
        guard let text = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else {
            return SyncFSMounts(mounts: [])
        }
        return SyncFSMounts(
            mounts: text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count > 2, fields[2] == "fuse.syncfs" else { return nil }
                let source = unescape(fields[0])
                let container = source.hasPrefix("syncfs:") ? String(source.dropFirst(7)) : source
                return Mount(mountpoint: unescape(fields[1]), container: container)
            })
    }

    /// The innermost mount holding `path` (absolute), as written or with its symlinks resolved;
    /// nil if none does.
    func enclosing(_ path: String) -> Mount? {
        let candidates = [path, Self.resolvedAsFarAsItExists(path)]
        return mounts.filter { mount in
            candidates.contains {
                $0 == mount.mountpoint || $0.hasPrefix(mount.mountpoint == "/" ? "/" : mount.mountpoint + "/")
            }
        }.max { $0.mountpoint.count < $1.mountpoint.count }
    }

    /// `path` with the symlinks of its longest existing prefix resolved (the rest appended).
    private static func resolvedAsFarAsItExists(_ path: String) -> String {
        var head = path
        var tail: [String] = []
        while !head.isEmpty && head != "/" {
            if let resolved = realpath(head, nil) {
                defer { free(resolved) }
                return ([String(cString: resolved)] + tail.reversed()).joined(separator: "/")
            }
            tail.append((head as NSString).lastPathComponent)
            head = (head as NSString).deletingLastPathComponent
        }
        return path
    }

    /// /proc/mounts writes space, tab, newline and backslash as \ooo.
    static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var rest = Array(field.utf8)[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "\\"), rest.count >= 3,
                let value = UInt8(String(decoding: rest.prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                rest = rest.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
