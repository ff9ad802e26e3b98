import Foundation

/// The stable identity of a file or directory: never the inode number, never the path.
///
/// A file keeps its ID across renames and moves; the sync engine keys container entries by it.
/// Textual form: 32 lowercase hex digits (a random 128-bit value).
public struct FileID: Hashable, Sendable, CustomStringConvertible, Codable {
    public let hex: String

    /// Accepts exactly 32 lowercase hexadecimal digits.
    public init?(hex: String) {
        guard hex.utf8.count == 32,
            hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        self.hex = hex
    }

    /// A fresh random ID.
    public static func random() -> FileID {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        let text = String(high, radix: 16).leftPadded(to: 16) + String(low, radix: 16).leftPadded(to: 16)
        return FileID(hex: text)!
    }

    /// The well-known ID of every container's root directory.
    public static let root = FileID(hex: String(repeating: "0", count: 32))!

    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = FileID(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "bad file ID"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
