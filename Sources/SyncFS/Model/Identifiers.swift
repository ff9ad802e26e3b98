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
///
/// The tree keeps one name per entry and its parent's children table another copy: a name of up
/// to 15 bytes without NUL (most names) is kept in the value itself, 16 bytes and no allocation;
/// a longer one in an array (`FileNameTests`). Each name has exactly one form, so names compare
/// and hash by their form. Read the bytes in place with `withUnsafeBytes`; `bytes` makes an array.
struct FileName: Hashable, Comparable, Sendable, CustomStringConvertible {
    private let storage: Storage

    private enum Storage: Sendable {
        /// The bytes in order, then zeros: a name holds no NUL, so the first zero ends it.
        case inline(UInt64, UInt32, UInt16, UInt8)
        case array([UInt8])
    }

    /// The longest name kept inline.
    static let inlineCapacity = 15

    init(bytes: [UInt8]) {
        if bytes.count <= Self.inlineCapacity && !bytes.contains(0) {
            var words: (UInt64, UInt32, UInt16, UInt8) = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
            storage = .inline(words.0, words.1, words.2, words.3)
        } else {
            storage = .array(bytes)
        }
    }

    init(_ string: String) { self.init(bytes: Array(string.utf8)) }

    /// The longest name Linux allows (NAME_MAX).
    static let maxLength = 255

    /// The name's bytes as a new array (an allocation for an inline name).
    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    var count: Int { withUnsafeBytes { $0.count } }

    /// Calls `body` with the name's bytes, in place.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        switch storage {
        case .inline(let a, let b, let c, let d):
            var words = (a, b, c, d)
            return try Swift.withUnsafeBytes(of: &words) { raw in
                let length = raw.prefix(Self.inlineCapacity).firstIndex(of: 0) ?? Self.inlineCapacity
                return try body(UnsafeRawBufferPointer(rebasing: raw[..<length]))
            }
        case .array(let bytes):
            return try bytes.withUnsafeBytes(body)
        }
    }

    /// Checks the name for use as a new entry.
    func validated() throws(FSError) -> FileName {
        let problem: FSError? = withUnsafeBytes { bytes in
            if bytes.count > FileName.maxLength { return .nameTooLong }
            let dots = bytes.count <= 2 && bytes.allSatisfy { $0 == 46 }
            if bytes.isEmpty || dots || bytes.contains(47) || bytes.contains(0) { return .invalidArgument }
            return nil
        }
        if let problem { throw problem }
        return self
    }

    static func == (a: FileName, b: FileName) -> Bool {
        switch (a.storage, b.storage) {
        case (.inline(let a0, let a1, let a2, let a3), .inline(let b0, let b1, let b2, let b3)):
            return a0 == b0 && a1 == b1 && a2 == b2 && a3 == b3
        case (.array(let a), .array(let b)): return a == b
        default: return false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch storage {
        case .inline(let a, let b, let c, let d):
            hasher.combine(a)
            hasher.combine(b)
            hasher.combine(c)
            hasher.combine(d)
        case .array(let bytes): hasher.combine(bytes)
        }
    }

    static func < (a: FileName, b: FileName) -> Bool {
        a.withUnsafeBytes { a in b.withUnsafeBytes { b in a.lexicographicallyPrecedes(b) } }
    }

    var description: String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
}
