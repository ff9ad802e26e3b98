import Foundation
import Glibc

/// The `--cache-size` of a mount: bytes, or a percentage of the filesystem holding the state
/// directory.
public enum CacheSize: Sendable, Equatable {
    case bytes(Int64)
    case percentOfFilesystem(Double)

    /// Parses `500M`, `20G`, `1048576`, `25%` (suffixes K, M, G, T are powers of 1024).
    public init?(parsing text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let percent = Double(trimmed.dropLast()), percent > 0, percent <= 100 else { return nil }
            self = .percentOfFilesystem(percent)
            return
        }
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var digits = Substring(trimmed)
        var multiplier: Int64 = 1
        if let last = digits.last?.uppercased().first, let unit = units[last] {
            multiplier = unit
            digits = digits.dropLast()
        }
        guard let number = Double(digits), number > 0 else { return nil }
        let value = number * Double(multiplier)
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
