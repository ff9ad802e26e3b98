import Dispatch
import Foundation
import Glibc
import SyncFS

/// Where the progress of `sync`, `unmount`, `download` and `pin` goes: standard error, redrawn
/// in place when standard error is a terminal, one line a second (and only on change) otherwise
/// (doc/CLI.md, "Progress"). Standard output stays free for results.
enum ProgressOutput {
    static func line() -> ProgressLine {
        ProgressLine(
            style: isatty(STDERR_FILENO) != 0 ? .redraw : .lines,
            clock: { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
            write: { text in
                var bytes = Array(text.utf8)
                _ = bytes.withUnsafeMutableBytes { fwriteStderr($0.baseAddress!, $0.count) }
            })
    }
}

/// Times for people.
enum LocalTime {
    /// An RFC 3339 time from the daemon as local wall-clock time (`15:02:11`, or with the date
    /// when it is not today; `15:02` without `seconds`); the text itself if it does not parse.
    static func local(_ timestamp: String, seconds: Bool = true) -> String {
        guard let date = ISO8601DateFormatter().date(from: timestamp) else { return timestamp }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let time = seconds ? "HH:mm:ss" : "HH:mm"
        formatter.dateFormat = Calendar.current.isDateInToday(date) ? time : "yyyy-MM-dd " + time
        return formatter.string(from: date)
    }
}
