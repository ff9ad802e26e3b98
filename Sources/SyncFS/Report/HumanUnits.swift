import Foundation

/// How the command line writes sizes, counts, rates and durations: the one formatter every
/// message of `syncfs-mount` uses (doc/CLI.md, "Units").
///
/// Sizes are binary (1024-based) and labelled so: `B`, `KiB`, `MiB`, `GiB`, `TiB`, `PiB`, `EiB`;
/// below 1 KiB the exact count (`0 B`, `1 B`, `1023 B`), above it one decimal (`1.0 KiB`,
/// `762.9 MiB`). Counts agree with their noun (`1 change`, `2 changes`, `0 changes`).
public enum HumanUnits {
    private static let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

    /// `bytes` as a binary size; a negative count is written as `0 B` (never shown to users as
    /// a size).
    public static func bytes(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(max(bytes, 0)) B" }
        var value = Double(bytes) / 1024
        var index = 0
        // Round first, so 1023.96 KiB is written 1.0 MiB, not 1024.0 KiB.
        while (value * 10).rounded() / 10 >= 1024 && index < units.count - 1 {
            value /= 1024
            index += 1
        }
        return String(format: "%.1f", value) + " " + units[index]
    }

    /// `count` and the noun in agreement: `count(1, "change")` is `1 change`,
    /// `count(3, "entry", "entries")` is `3 entries`. The plural is the singular plus `s` unless
    /// given.
    public static func count(_ count: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(count) " + (count == 1 ? singular : plural ?? singular + "s")
    }

    /// A transfer rate: `bytes(perSecond)` + `/s`.
    public static func rate(_ bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond > 0 else { return "0 B/s" }
        return bytes(Int64(min(bytesPerSecond, Double(Int64.max / 2)))) + "/s"
    }

    /// A duration to the second: `45 s`, `3 min 05 s`, `2 h 07 min`; more than 99 hours is
    /// `more than 99 h`.
    public static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "unknown" }
        let whole = Int(seconds.rounded(.up))
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return String(format: "%d min %02d s", whole / 60, whole % 60) }
        if whole < 100 * 3600 { return String(format: "%d h %02d min", whole / 3600, (whole % 3600) / 60) }
        return "more than 99 h"
    }
}
