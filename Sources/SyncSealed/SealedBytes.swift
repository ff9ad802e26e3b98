import SyncBackend

/// The binary encoding every sealed format uses: big-endian integers, and byte strings prefixed
/// with their length. One writer and one reader, so each format is a list of fields read back in
/// the order written; a reader that meets anything else (too short, a length past the end, bytes
/// left over) answers nil and the caller refuses the whole object.
struct SealedWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func uint32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }

    mutating func uint64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    mutating func int64(_ value: Int64) { uint64(UInt64(bitPattern: value)) }

    /// Exactly the bytes given, no length: for fields whose length the format fixes.
    mutating func fixed(_ value: some Collection<UInt8>) { bytes.append(contentsOf: value) }

    /// A length (32 bits) and the bytes.
    mutating func counted(_ value: some Collection<UInt8>) {
        uint32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func fileID(_ id: FileID) {
        uint64(id.high)
        uint64(id.low)
    }
}

/// Reads what `SealedWriter` wrote; every read answers nil past the end.
struct SealedReader {
    private let bytes: [UInt8]
    private var offset: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    /// True when every byte was read.
    var isAtEnd: Bool { offset == bytes.count }

    var remaining: Int { bytes.count - offset }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint32() -> UInt32? {
        guard let raw = fixed(4) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func uint64() -> UInt64? {
        guard let raw = fixed(8) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func int64() -> Int64? { uint64().map { Int64(bitPattern: $0) } }

    mutating func fixed(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= remaining else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A counted byte string of at most `limit` bytes.
    mutating func counted(limit: Int) -> [UInt8]? {
        guard let count = uint32(), Int(count) <= limit else { return nil }
        return fixed(Int(count))
    }

    mutating func fileID() -> FileID? {
        guard let high = uint64(), let low = uint64() else { return nil }
        return FileID(high: high, low: low)
    }
}

/// Lowercase hex, for identities shown to people and in logs.
enum Hex {
    static func string(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension Hex {
    /// The bytes of an even number of hex digits; stops at the first non-digit pair.
    static func bytes(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index + 1 < digits.count, let high = nibble(digits[index]), let low = nibble(digits[index + 1]) {
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 48...57: digit - 48
        case 97...102: digit - 87
        case 65...70: digit - 55
        default: nil
        }
    }
}

/// Text kept in sealed objects.
enum SealedText {
    /// `text`'s first whole characters within `limit` UTF-8 bytes (a cut inside a character would
    /// leave bytes that are not UTF-8, which readers refuse).
    static func cut(_ text: String, toBytes limit: Int) -> String {
        var kept = ""
        for character in text {
            guard kept.utf8.count + character.utf8.count <= limit else { break }
            kept.append(character)
        }
        return kept
    }
}
