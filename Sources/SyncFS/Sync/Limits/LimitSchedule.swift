import Foundation
import SyncBackend

/// A mount's bandwidth limits: one rate per direction, nil for no limit.
package struct BandwidthLimits: Sendable, Equatable {
    package var upload: BandwidthRate?
    package var download: BandwidthRate?

    package init(upload: BandwidthRate? = nil, download: BandwidthRate? = nil) {
        self.upload = upload
        self.download = download
    }
}

/// `--limit-schedule`: the windows of the week in which other bandwidth limits apply.
///
/// Text: entries separated by `;`, each `[DAYS] HH:MM-HH:MM up=RATE down=RATE` (fields separated
/// by spaces or `/`; at least one of `up=`, `down=`; a direction not named keeps the plain limit).
/// DAYS: `Mon` … `Sun` (any case), ranges (`Mon-Fri`, wrapping: `Fri-Mon`) and lists of them
/// (`,` or `+`: `Mon,Wed,Fri`, `Sat+Sun`); none means every day. Times are local wall-clock time;
/// the end may be `24:00`, and an end before the start crosses midnight into the next day (the
/// days name the day the window starts). The first entry in force wins.
package struct LimitSchedule: Sendable, Equatable {
    /// One window of the week.
    struct Entry: Sendable, Equatable {
        /// Days the window starts on, Monday 0 … Sunday 6.
        var days: Set<Int>
        /// Minutes after midnight, start inclusive, end exclusive (end 1440: midnight).
        var start: Int
        var end: Int
        /// The limits in force, per direction; a direction absent keeps the plain limit.
        var upload: BandwidthRate??
        var download: BandwidthRate??
        /// The entry as written (trimmed), for `status`.
        var text: String

        /// The window holds the minute `minute` of the day `day` (Monday 0).
        func holds(day: Int, minute: Int) -> Bool {
            if start < end { return days.contains(day) && minute >= start && minute < end }
            return (days.contains(day) && minute >= start) || (days.contains((day + 6) % 7) && minute < end)
        }
    }

    var entries: [Entry]

    /// No schedule.
    static let none = LimitSchedule(entries: [])

    private init(entries: [Entry]) { self.entries = entries }

    /// Why a schedule was refused.
    package struct ParseError: Error, Equatable, CustomStringConvertible {
        package let description: String
    }

    /// The most entries a schedule takes (a longer one is surely not typed by hand).
    static let maximumEntries = 100

    /// Parses `text`; an empty text is no schedule (no entries).
    package init(parsing text: String) throws(ParseError) {
        guard text.utf8.count <= 4096 else { throw ParseError(description: "the schedule is longer than 4096 bytes") }
        var entries: [Entry] = []
        for part in text.split(separator: ";") {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            do throws(ParseError) {
                entries.append(try Self.entry(trimmed))
            } catch {
                throw ParseError(description: "schedule entry '\(trimmed.prefix(60))': \(error.description)")
            }
        }
        guard entries.count <= Self.maximumEntries else {
            throw ParseError(description: "more than \(Self.maximumEntries) schedule entries")
        }
        self.entries = entries
    }

    /// The entry in force at `date` in `timeZone` (the first one holding it), nil outside every one.
    func entry(at date: Date, in timeZone: TimeZone = .current) -> Entry? {
        guard !entries.isEmpty else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        guard let weekday = parts.weekday, let hour = parts.hour, let minute = parts.minute else { return nil }
        let day = (weekday + 5) % 7  // Calendar: Sunday 1 … Saturday 7
        return entries.first { $0.holds(day: day, minute: hour * 60 + minute) }
    }

    /// The limits at `date`: the plain ones, with what the entry in force sets in their place.
    func limits(at date: Date, plain: BandwidthLimits, in timeZone: TimeZone = .current) -> BandwidthLimits {
        guard let entry = entry(at: date, in: timeZone) else { return plain }
        return BandwidthLimits(upload: entry.upload ?? plain.upload, download: entry.download ?? plain.download)
    }

    static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    private static func entry(_ text: String) throws(ParseError) -> Entry {
        let fields = text.split { $0 == " " || $0 == "\t" || $0 == "/" }.map(String.init)
        var days: Set<Int>?
        var window: (Int, Int)?
        var upload: BandwidthRate??
        var download: BandwidthRate??
        var afterRate = false
        for field in fields {
            let lower = field.lowercased()
            // A RATE as for --upload-limit may end in `/s` (`up=1M/s`): the `s` after a rate.
            defer { afterRate = lower.hasPrefix("up=") || lower.hasPrefix("down=") }
            if lower == "s" && afterRate { continue }
            if lower.hasPrefix("up=") || lower.hasPrefix("down=") {
                let isUpload = lower.hasPrefix("up=")
                guard (isUpload ? upload : download) == nil else {
                    throw ParseError(description: "\(isUpload ? "up" : "down")= given twice")
                }
                let rate: BandwidthRate?
                do throws(BandwidthRate.ParseError) {
                    rate = try BandwidthRate.parse(String(field.drop { $0 != "=" }.dropFirst()))
                } catch {
                    throw ParseError(description: error.description)
                }
                if isUpload { upload = .some(rate) } else { download = .some(rate) }
            } else if field.first?.isNumber == true {
                guard window == nil else { throw ParseError(description: "two time ranges") }
                window = try timeRange(field)
            } else {
                guard days == nil, window == nil else {
                    throw ParseError(description: "'\(field.prefix(20))' is not a time range, up=RATE or down=RATE")
                }
                days = try dayList(lower)
            }
        }
        guard let window else { throw ParseError(description: "no time range HH:MM-HH:MM") }
        guard upload != nil || download != nil else { throw ParseError(description: "no up=RATE or down=RATE") }
        return Entry(
            days: days ?? Set(0..<7), start: window.0, end: window.1, upload: upload, download: download,
            text: fields.joined(separator: " "))
    }

    private static func dayList(_ text: String) throws(ParseError) -> Set<Int> {
        var days = Set<Int>()
        for item in text.split(whereSeparator: { $0 == "," || $0 == "+" }) {
            let ends = item.split(separator: "-", omittingEmptySubsequences: false)
            guard ends.count <= 2 else { throw ParseError(description: "'\(item.prefix(20))' is not a day range") }
            let bounds = try ends.map { end throws(ParseError) -> Int in
                guard let day = dayNames.firstIndex(of: String(end)) else {
                    throw ParseError(
                        description: "'\(end.prefix(20))' is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)")
                }
                return day
            }
            var day = bounds[0]
            days.insert(day)
            while day != bounds[bounds.count - 1] {
                day = (day + 1) % 7
                days.insert(day)
            }
        }
        guard !days.isEmpty else { throw ParseError(description: "no day") }
        return days
    }

    private static func timeRange(_ text: String) throws(ParseError) -> (Int, Int) {
        let ends = text.split(separator: "-", omittingEmptySubsequences: false)
        guard ends.count == 2, let start = minutes(ends[0], allowMidnightEnd: false),
            let end = minutes(ends[1], allowMidnightEnd: true)
        else { throw ParseError(description: "'\(text.prefix(20))' is not a time range HH:MM-HH:MM") }
        guard start != end % 1440 || (start == 0 && end == 1440) else {
            throw ParseError(description: "'\(text)' is an empty time range (00:00-24:00 is the whole day)")
        }
        return (start, end)
    }

    /// `HH:MM` (24-hour) in minutes after midnight; `24:00` only as an end.
    private static func minutes(_ text: Substring, allowMidnightEnd: Bool) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count <= 2, parts[1].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), minute < 60
        else { return nil }
        if hour == 24 && minute == 0 && allowMidnightEnd { return 1440 }
        return hour < 24 ? hour * 60 + minute : nil
    }
}
