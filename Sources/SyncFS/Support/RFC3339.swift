import Foundation

/// Times shown to people and scripts (`status`, log lines): RFC 3339 in UTC, to the second
/// (`2026-11-24T15:02:11Z`).
enum RFC3339 {
    static func utc(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
