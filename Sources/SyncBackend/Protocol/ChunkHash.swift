/// The identity of a chunk: the SHA-256 digest of its plain (uncompressed) bytes.
///
/// Containers store each chunk once under its hash (`put` is idempotent); clients verify every
/// chunk they download against it. Textual form: 64 lowercase hex digits.
public struct ChunkHash: Hashable, Sendable, Comparable, CustomStringConvertible, HexEncodedValue {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// Exactly 32 bytes, or nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// Exactly 64 hex digits (either case), or nil.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            result.append(high << 4 | low)
        }
        self.bytes = result
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 48...57: return digit - 48
        case 97...102: return digit - 87
        case 65...70: return digit - 55
        default: return nil
        }
    }

    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { hex }

    public static func < (a: ChunkHash, b: ChunkHash) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

}

/// One piece of a file's manifest: which chunk, and how many plain bytes it holds.
public struct ChunkRef: Hashable, Sendable, Codable {
    public var hash: ChunkHash
    public var length: Int64

    public init(hash: ChunkHash, length: Int64) {
        self.hash = hash
        self.length = length
    }
}

/// How a chunk's payload is stored: zlib when that made it smaller, raw otherwise; sealed when a
/// client encrypted it.
public enum ChunkEncoding: UInt8, Sendable, Codable {
    case raw = 0
    case zlib = 1
    /// A chunk a client encrypted: the container stores and serves it as is; `payload.count ==
    /// plainLength`; its hash is a name the container cannot verify (a keyed MAC, not the SHA-256
    /// of the payload): the client that reads it verifies it. Never plain content:
    /// `ChunkCodec.decode` refuses it.
    case sealed = 2
}

/// A chunk as it travels and is stored: its hash and plain length, and the encoded payload.
///
/// Invariant (checked by the reader, never trusted): decoding `payload` gives `plainLength`
/// bytes whose SHA-256 is `hash`; for a sealed chunk, `payload` holds `plainLength` bytes and
/// only the client that sealed it can check its name (`ChunkCodec.verifyShape`).
public struct EncodedChunk: Sendable, Equatable {
    public var hash: ChunkHash
    public var encoding: ChunkEncoding
    public var plainLength: Int
    public var payload: [UInt8]

    public init(hash: ChunkHash, encoding: ChunkEncoding, plainLength: Int, payload: [UInt8]) {
        self.hash = hash
        self.encoding = encoding
        self.plainLength = plainLength
        self.payload = payload
    }
}
