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
