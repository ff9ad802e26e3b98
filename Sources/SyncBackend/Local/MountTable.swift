import Foundation

/// Reads `/proc/self/mountinfo` (proc(5)): which filesystem type holds a path.
enum MountTable {
    /// The type (`ext4`, `nfs4`, `fuse.sshfs`, …) of the mount holding `path` (symbolic links
    /// resolved), or nil if it cannot be told.
    static func filesystemType(containing path: String) -> String? {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var best: (mountPoint: String, type: String)?
        for line in table.split(separator: "\n") {
            guard let (mountPoint, type) = parse(line) else { continue }
            let covers = mountPoint == "/" || target == mountPoint || target.hasPrefix(mountPoint + "/")
            // Later lines are mounted over earlier ones at the same point.
            if covers && mountPoint.count >= (best?.mountPoint.count ?? 0) { best = (mountPoint, type) }
        }
        return best?.type
    }

    /// Field 5 (the mount point, octal escapes decoded) and the first field after " - " (the type).
    private static func parse(_ line: Substring) -> (String, String)? {
        let halves = line.components(separatedBy: " - ")
        guard halves.count >= 2 else { return nil }
        let fields = halves[0].split(separator: " ")
        let tail = halves[1].split(separator: " ")
        guard fields.count >= 5, let type = tail.first else { return nil }
        return (unescape(fields[4]), String(type))
    }

    /// `\040` and friends back to their bytes.
    private static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3,
                let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
