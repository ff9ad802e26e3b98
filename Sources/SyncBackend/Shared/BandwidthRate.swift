import Foundation

/// A transfer rate in bytes per second, as `--upload-limit RATE` and its kin take it.
///
/// RATE is a number (a fraction allowed) and a unit, any case, a space and a trailing `/s`
/// allowed: none or `B` for bytes; `K`, `M`, `G`, `T` and `KiB`, `MiB`, `GiB`, `TiB` are
/// binary (powers of 1024, rclone's convention: `2M` is 2,097,152 bytes per second); `kB`,
/// `MB`, `GB`, `TB` are decimal (powers of 1000). `off` and `0` mean no limit (nil). Anything
/// else — negative, not a number, an unknown unit, below 1 byte or above `maximum` — is refused
/// with a sentence saying why (never a crash, never a silent clamp).
package struct BandwidthRate: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Bytes per second, 1 ... `maximum`.
    package let bytesPerSecond: Int64

    /// The largest rate accepted: 1 PiB/s (far above any link; a larger number is a typo).
    package static let maximum: Int64 = 1 << 50

    package init?(bytesPerSecond: Int64) {
        guard bytesPerSecond >= 1 && bytesPerSecond <= Self.maximum else { return nil }
        self.bytesPerSecond = bytesPerSecond
    }

    /// Why a RATE was refused.
    package struct ParseError: Error, Equatable, CustomStringConvertible {
        package let description: String
    }

    /// The rate `text` names; nil for `off` or `0` (no limit).
    package static func parse(_ text: String) throws(ParseError) -> BandwidthRate? {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        let shown = String(trimmed.prefix(40))
        func refuse(_ why: String) -> ParseError {
            ParseError(
                description: "'\(shown)' is not a rate: \(why) (a number of bytes per second with K, M, G "
                    + "(powers of 1024) or kB, MB, GB (powers of 1000), e.g. 512K, 2M, 10MB; off or 0 for no limit)")
        }
        if trimmed.lowercased() == "off" { return nil }
        if trimmed.lowercased().hasSuffix("/s") { trimmed = String(trimmed.dropLast(2)) }
        if trimmed.hasPrefix("-") { throw refuse("it is negative") }
        let number = trimmed.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard !number.isEmpty, number.count <= 30, number.filter({ $0 == "." }).count <= 1,
            let value = Double(number), value.isFinite
        else { throw refuse("no number") }
        guard let multiplier = ByteUnits.multipliers[unit] else { throw refuse("unknown unit '\(unit.prefix(10))'") }
        if value == 0 { return nil }
        let bytes = value * multiplier
        guard bytes <= Double(maximum) else { throw refuse("more than 1 PiB per second") }
        guard bytes >= 1, let rate = BandwidthRate(bytesPerSecond: Int64(bytes)) else {
            throw refuse("less than 1 byte per second")
        }
        return rate
    }

    /// The rate in the largest binary unit that keeps it whole (`2M`, `1536K`, `100`), which
    /// `parse` reads back to the same rate.
    package var text: String {
        var value = bytesPerSecond
        for unit in ["", "K", "M", "G", "T"] {
            if value % 1024 != 0 || unit == "T" { return "\(value)\(unit)" }
            value /= 1024
        }
        return "\(value)T"
    }

    /// For people: `2 MiB/s`, `1.5 MiB/s`, `100 B/s`.
    package var description: String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytesPerSecond)
        var index = 0
        while value >= 1024 && index < units.count - 1 {
            value /= 1024
            index += 1
        }
        let number = value == value.rounded() ? String(Int64(value)) : String(format: "%.1f", value)
        return "\(number) \(units[index])/s"
    }
}

extension Optional where Wrapped == BandwidthRate {
    /// `off` for no limit, else the rate's `text` (what `parse` reads back).
    package var rateText: String { map(\.text) ?? "off" }
}
