/// How the page writes sizes and times: sizes in decimal units (as `ls -lh --si` and file
/// managers do), times in UTC with their ISO 8601 form for `<time datetime>`.
enum WebFormat {
    static func size(_ bytes: Int64) -> String {
        guard bytes >= 1000 else { return "\(bytes) B" }
        let units = ["kB", "MB", "GB", "TB", "PB", "EB"]
        var value = Double(bytes) / 1000
        var unit = 0
        while value >= 999.95, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    /// `2026-11-30 16:05 UTC` and `2026-11-30T16:05:09Z` for Unix seconds.
    static func time(_ seconds: Int64) -> (text: String, iso: String) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = seconds - days * 86_400
        let (year, month, day) = civil(days)
        let date = "\(year)-\(two(month))-\(two(day))"
        let hour = two(rest / 3600)
        let minute = two(rest / 60 % 60)
        return ("\(date) \(hour):\(minute) UTC", "\(date)T\(hour):\(minute):\(two(rest % 60))Z")
    }

    /// A file's modification time (nanoseconds since the epoch) as `time` writes it.
    static func time(nanoseconds: Int64) -> (text: String, iso: String) {
        time(nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds + 1) / 1_000_000_000 - 1)
    }

    private static func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
    /// `civil_from_days`).
    private static func civil(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
