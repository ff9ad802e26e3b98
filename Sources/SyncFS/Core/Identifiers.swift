import Foundation

/// The kernel's number for an inode of this mount. `1` is the root (FUSE_ROOT_ID).
///
/// Inode numbers are local to one state directory: each entry is given one when it first appears
/// and keeps it for life (it is stored with the entry), so `st_ino` is stable across remounts.
public struct InodeNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ value: UInt64) { self.rawValue = value }
    public static let root = InodeNumber(1)
    public static func < (a: InodeNumber, b: InodeNumber) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "ino \(rawValue)" }
}

/// The stable identity of a file or directory: never the inode number, never the path.
///
/// A file keeps its ID across renames and moves; the sync engine keys container entries by it.
/// Textual form: 32 lowercase hex digits (a random 128-bit value).
public struct FileID: Hashable, Sendable, CustomStringConvertible {
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
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// A directory entry name: the raw bytes the kernel gave (Linux names need not be UTF-8).
///
/// Invariant (checked by `validated`): 1...255 bytes, no `/`, no NUL, not `.` or `..`.
public struct FileName: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ string: String) { self.bytes = Array(string.utf8) }

    /// The longest name Linux allows (NAME_MAX).
    public static let maxLength = 255

    /// Checks the name for use as a new entry.
    public func validated() throws(FSError) -> FileName {
        if bytes.count > FileName.maxLength { throw .nameTooLong }
        if bytes.isEmpty || bytes == [46] || bytes == [46, 46] || bytes.contains(47) || bytes.contains(0) {
            throw .invalidArgument
        }
        return self
    }

    public static func < (a: FileName, b: FileName) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    public var description: String { String(decoding: bytes, as: UTF8.self) }
}
