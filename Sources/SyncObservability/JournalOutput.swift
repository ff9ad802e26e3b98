import Foundation
import Logging

/// journald's native protocol (systemd's "Native Journal Protocol"): one datagram per record to
/// `/run/systemd/journal/socket`, each field `KEY=VALUE\n`, or `KEY\n`, its length (64-bit
/// little-endian) and the value then `\n` for a value with a newline.
///
/// Used with `--log-format json` when systemd connected standard error to the journal
/// (`JOURNAL_STREAM` names its device and inode): the journal then gets the JSON line's fields as
/// its own fields, not one text: `MESSAGE`, `PRIORITY` (syslog's, from the level),
/// `SYSLOG_IDENTIFIER`, `SYNCFS_LEVEL`, `SYNCFS_LABEL` and each metadata key as
/// `SYNCFS_META_KEY` (upper case; other characters than `A-Z 0-9 _` become `_`). A record the
/// socket refuses is written on standard error as a JSON line instead, so nothing is lost.
public struct JournalOutput: Sendable {
    public let socketPath: String
    public let identifier: String

    public init(socketPath: String = "/run/systemd/journal/socket", identifier: String = "syncfs-mount") {
        self.socketPath = socketPath
        self.identifier = identifier
    }

    /// The journal, when `environment`'s `JOURNAL_STREAM` ("DEVICE:INODE") is standard error's.
    public static func detect(environment: [String: String] = ProcessInfo.processInfo.environment) -> JournalOutput? {
        guard let stream = environment["JOURNAL_STREAM"] else { return nil }
        let parts = stream.split(separator: ":")
        var info = stat()
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]),
            fstat(STDERR_FILENO, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode
        else { return nil }
        return JournalOutput()
    }

    /// The record's fields, in the journal's encoding.
    func datagram(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var fields: [(String, String)] = [
            ("MESSAGE", message), ("PRIORITY", String(Self.priority(level))), ("SYSLOG_IDENTIFIER", identifier),
            ("SYNCFS_LEVEL", level.rawValue), ("SYNCFS_LABEL", label),
        ]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            fields.append(("SYNCFS_META_" + Self.fieldName(key), "\(value)"))
        }
        var bytes: [UInt8] = []
        for (key, value) in fields {
            let data = Array(value.utf8)
            bytes += Array(key.utf8)
            if data.contains(0x0A) {
                bytes.append(0x0A)
                var length = UInt64(data.count).littleEndian
                withUnsafeBytes(of: &length) { bytes += $0 }
                bytes += data
            } else {
                bytes.append(UInt8(ascii: "="))
                bytes += data
            }
            bytes.append(0x0A)
        }
        return bytes
    }

    /// Sends one datagram; false if the socket could not take it.
    func send(_ datagram: [UInt8]) -> Bool {
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let sent = datagram.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(socket, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return sent == datagram.count
    }

    /// syslog's priority for a level (journalctl's `-p`).
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// A journal field name from a metadata key: upper case, `A-Z 0-9 _` only.
    static func fieldName(_ key: String) -> String {
        String(
            key.uppercased().unicodeScalars.map { scalar -> Character in
                ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) ? Character(scalar) : "_"
            })
    }
}
