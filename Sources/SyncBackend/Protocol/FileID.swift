import Foundation

/// The stable identity of a file or directory: never the inode number, never the path.
///
/// A file keeps its ID across renames and moves; the sync engine keys container entries by it.
/// Textual form: 32 lowercase hex digits (a random 128-bit value).
public struct FileID: Hashable, Sendable, CustomStringConvertible, HexEncodedValue {
    /// The 128 bits, high half first (16 bytes inline: no allocation, cheap to hash — the tree
    /// and the sync state keep one per entry).
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Accepts exactly 32 lowercase hexadecimal digits.
    public init?(hex: String) {
        var hex = hex
        guard let parsed = hex.withUTF8({ FileID(hexDigits: $0) }) else { return nil }
        self = parsed
    }

    /// Accepts exactly 32 lowercase hexadecimal digits, as UTF-8 bytes (read in place, no copy).
    public init?(hexDigits digits: UnsafeBufferPointer<UInt8>) {
        guard digits.count == 32 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<32 {
            let digit = digits[index]
            let value: UInt64
            switch digit {
            case 48...57: value = UInt64(digit - 48)
            case 97...102: value = UInt64(digit - 87)
            default: return nil
            }
            if index < 16 { high = high << 4 | value } else { low = low << 4 | value }
        }
        self.init(high: high, low: low)
    }

    /// The textual form: 32 lowercase hex digits.
    public var hex: String {
        String(high, radix: 16).leftPadded(to: 16) + String(low, radix: 16).leftPadded(to: 16)
    }

    /// A fresh random ID.
    public static func random() -> FileID {
        var generator = SystemRandomNumberGenerator()
        return FileID(high: generator.next(), low: generator.next())
    }

    /// The well-known ID of every container's root directory.
    public static let root = FileID(high: 0, low: 0)

    public var description: String { hex }

}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
