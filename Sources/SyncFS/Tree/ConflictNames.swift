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
