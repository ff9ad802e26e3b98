import Logging

/// `--log-format`: how `serve` and `mount` write their log lines on standard error.
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's `StreamLogHandler` lines: `TIME LEVEL LABEL: [METADATA] MESSAGE`.
    case text
    /// One JSON object per line (`JSONLogHandler`; the fields are in doc/CLI.md, "Log lines").
    case json

    /// Routes every `Logger` of the process to standard error in this format at `level`.
    /// Called once, first thing in a command's `run` (swift-log allows one bootstrap).
    public func bootstrap(level: Logger.Level) {
        switch self {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            let journal = JournalOutput.detect()
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level, journal: journal) }
        }
    }

    /// The values `--log-format` takes, for messages.
    public static let choices = allCases.map(\.rawValue).joined(separator: " or ")
}
