import Foundation
import Logging
import Synchronization

/// A log handler writing one JSON object per line on standard error (`--log-format json`):
///
///     {"time":"2026-11-30T15:45:21.123456Z","level":"info","label":"syncfs","message":"…","metadata":{"duration":"12 ms"}}
///
/// `time` is RFC 3339 in UTC with microseconds; `level` is swift-log's level name (`trace` …
/// `critical`); `label` is the logger's label (the component); `message` is the text the
/// text format shows; `metadata` (only when there is any) holds the handler's, the provider's and
/// the call's metadata, each value as a string (a list or dictionary value as its text form).
/// Keys are written in this order and never renamed (doc/CLI.md, "Log lines"). Each line is one
/// `write(2)`, so lines of concurrent loggers never interleave. Under systemd the same fields go to
/// the journal as its own fields (`JournalOutput`).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: @Sendable ([UInt8]) -> Void
    /// The journal, when standard error is systemd's stream to it (`JournalOutput.detect`): each
    /// record goes there with its fields, and to `output` only if the journal refuses it.
    private let journal: JournalOutput?

    public init(
        label: String, level: Logger.Level = .info, metadataProvider: Logger.MetadataProvider? = nil,
        journal: JournalOutput? = nil,
        output: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.writeToStandardError
    ) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.journal = journal
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        if let journal,
            journal.send(
                journal.datagram(level: event.level, label: label, message: "\(event.message)", metadata: merged))
        {
            return
        }
        output(
            Array(
                Self.line(time: Date(), level: event.level, label: label, message: "\(event.message)", metadata: merged)
                    .utf8))
    }

    /// The JSON line (with its newline) for one event.
    static func line(
        time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata
    ) -> String {
        var text = "{\"time\":\(quoted(timestamp(time))),\"level\":\(quoted(level.rawValue))"
        text += ",\"label\":\(quoted(label)),\"message\":\(quoted(message))"
        if !metadata.isEmpty {
            let fields = metadata.sorted { $0.key < $1.key }.map { "\(quoted($0.key)):\(quoted("\($0.value)"))" }
            text += ",\"metadata\":{\(fields.joined(separator: ","))}"
        }
        return text + "}\n"
    }

    /// RFC 3339 in UTC with microseconds: `2026-11-30T15:45:21.123456Z`.
    static func timestamp(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        let micros = Int(((interval - Double(seconds)) * 1_000_000).rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let fraction = String(micros)
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)Z"
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped; other
    /// characters (UTF-8) as they are.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let control where control.value < 0x20 || control.value == 0x7F:
                let hex = String(control.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Writes a whole line with as few `write(2)` calls as it takes (one, for any line shorter
    /// than a pipe's buffer).
    public static let writeToStandardError: @Sendable ([UInt8]) -> Void = { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
