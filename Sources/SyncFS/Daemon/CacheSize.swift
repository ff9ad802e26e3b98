import Foundation
import Glibc
import SyncBackend

/// The `--cache-size` of a mount: bytes, or a percentage of the filesystem holding the state
/// directory.
public enum CacheSize: Sendable, Equatable {
    case bytes(Int64)
    case percentOfFilesystem(Double)

    /// Parses `1048576`, `25%`, and a number with a unit, any case, a space between allowed:
    /// SI `kB`, `MB`, `GB`, `TB` (powers of 1000: `20GB` is 20,000,000,000 bytes), IEC `KiB`,
    /// `MiB`, `GiB`, `TiB` and the short `K`, `M`, `G`, `T` (powers of 1024), and `B`.
    public init?(parsing text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let percent = Double(trimmed.dropLast()), percent > 0, percent <= 100 else { return nil }
            self = .percentOfFilesystem(percent)
            return
        }
        let digits = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard let multiplier = ByteUnits.multipliers[unit], let number = Double(digits), number > 0 else { return nil }
        let value = number * multiplier
        guard value < Double(Int64.max) else { return nil }
        self = .bytes(Int64(value))
    }

    /// The budget in bytes for a state directory at `path`; nil if the filesystem cannot be asked.
    public func bytes(forFilesystemOf path: String) -> Int64? {
        switch self {
        case .bytes(let value): return value
        case .percentOfFilesystem(let percent):
            var info = statvfs()
            guard statvfs(path, &info) == 0 else { return nil }
            let total = Double(info.f_blocks) * Double(info.f_frsize)
            return Int64(total * percent / 100)
        }
    }
}
