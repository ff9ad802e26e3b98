import Foundation

/// The kernel's number for an inode of this mount. `1` is the root (FUSE_ROOT_ID).
///
/// Inode numbers are local to one state directory: each entry is given one when it first appears
/// and keeps it for life (it is stored with the entry), so `st_ino` is stable across remounts.
struct InodeNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    let rawValue: UInt64
    init(rawValue: UInt64) { self.rawValue = rawValue }
    init(_ value: UInt64) { self.rawValue = value }
    static let root = InodeNumber(1)
    static func < (a: InodeNumber, b: InodeNumber) -> Bool { a.rawValue < b.rawValue }
    var description: String { "ino \(rawValue)" }
}

/// A directory entry name: the raw bytes the kernel gave (Linux names need not be UTF-8).
///
/// Invariant (checked by `validated`): 1...255 bytes, no `/`, no NUL, not `.` or `..`.
struct FileName: Hashable, Comparable, Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    init(bytes: [UInt8]) { self.bytes = bytes }
    init(_ string: String) { self.bytes = Array(string.utf8) }

    /// The longest name Linux allows (NAME_MAX).
    static let maxLength = 255

    /// Checks the name for use as a new entry.
    func validated() throws(FSError) -> FileName {
        if bytes.count > FileName.maxLength { throw .nameTooLong }
        if bytes.isEmpty || bytes == [46] || bytes == [46, 46] || bytes.contains(47) || bytes.contains(0) {
            throw .invalidArgument
        }
        return self
    }

    static func < (a: FileName, b: FileName) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    var description: String { String(decoding: bytes, as: UTF8.self) }
}
