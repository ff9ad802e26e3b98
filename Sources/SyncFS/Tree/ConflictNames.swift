import Glibc

/// Names for the "keep both" outcome: `report (conflict from DEVICE 2026-11-21 154502).txt` — the
/// device name of the mount that kept the copy (`DeviceName`, sanitised again here: it ends up
/// in a file name) and its local time — then `… 154502 2).txt` and so on until one is
/// free in the directory. Stays within NAME_MAX (the stem is shortened, the extension kept so
/// programs still recognise the file).
enum ConflictNames {
    /// A name not present in `directory` (call under the namespace lock).
    static func free(for name: FileName, in directory: Node, host: String, time: Int64) -> FileName {
        let bytes = name.bytes
        var stem = bytes
        var ext: [UInt8] = []
        if let dot = bytes.lastIndex(of: 46), dot > 0, bytes.count - dot <= 16 {
            stem = Array(bytes[..<dot])
            ext = Array(bytes[dot...])
        }
        let tag = "conflict from \(DeviceName.sanitised(host)) \(stamp(time))"
        var attempt = 1
        while true {
            let suffix = Array((attempt == 1 ? " (\(tag))" : " (\(tag) \(attempt))").utf8)
            let room = FileName.maxLength - suffix.count - ext.count
            let candidate = FileName(bytes: Array(stem.prefix(max(1, room))) + suffix + ext)
            if directory.children[candidate] == nil { return candidate }
            attempt += 1
        }
    }

    /// `YYYY-MM-DD HHMMSS` in the local time zone.
    static func stamp(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))"
    }

    /// This machine's host name (the start of the default `DeviceName`), or "unknown-host".
    static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown-host" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) == 47 ? 45 : UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self)
        return name.isEmpty ? "unknown-host" : name
    }()
}

/// A kernel cache entry to drop after a change the kernel did not make itself.
enum KernelInvalidation {
    /// The name in the directory (added, removed or pointing elsewhere).
    case entry(parent: InodeNumber, name: FileName)
    /// Attributes only.
    case attributes(InodeNumber)
    /// Attributes and cached pages (the content was replaced).
    case content(InodeNumber)
    /// The name no longer leads to `child`, which is gone (deleted, or replaced by a new inode):
    /// the kernel also drops the inode's link count, so inotify watchers of the file itself get
    /// IN_DELETE_SELF, as after a local unlink or replace-by-rename.
    case deleted(parent: InodeNumber, child: InodeNumber, name: FileName)

    /// The kernel takes the parent directory's lock to carry it out (see `LiveTree.perform`).
    var takesDirectoryLock: Bool {
        switch self {
        case .entry, .deleted: return true
        case .attributes, .content: return false
        }
    }
}
