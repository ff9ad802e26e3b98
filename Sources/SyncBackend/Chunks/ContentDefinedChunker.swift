/// Content-defined chunking with FastCDC (Xia et al., USENIX ATC 2016): a gear rolling hash,
/// cut-point skipping below `minSize`, and normalized chunking (level 2).
///
/// Contract:
/// - A cut depends only on the bytes of the chunk being cut (at most `maxSize` of them), never on
///   what came before it, so an insertion or deletion changes the chunks around it and boundaries
///   resynchronise shortly after.
/// - Every chunk is `minSize + 1 ... maxSize` bytes long, except the last chunk of the data, which
///   may be shorter (and is the whole data when the data is at most `minSize` bytes).
/// - The gear table, the masks and the parameters are part of the storage format: two clients
///   deduplicate each other's chunks only if they cut with the same ones. Changing any of them is
///   never incorrect, but it makes every existing chunk unmatched.
///
/// How a cut is found, for a chunk starting at offset 0: bytes below `minSize` are skipped; from
/// `minSize` on, each byte updates `fingerprint = fingerprint << 1 + gear[byte]` (a 64-byte
/// window) and the chunk ends after the first byte where `fingerprint & mask == 0`. Below
/// `averageSize` the mask has log2(averageSize) + 2 bits (cuts are rare), from there on it has
/// log2(averageSize) - 2 bits (cuts are frequent), which narrows the size distribution around
/// the average; at `maxSize` the chunk is cut regardless. Masks take the top bits of the
/// fingerprint, the ones that depend on the whole 64-byte window.
public struct ContentDefinedChunker: Sendable {
    /// The product's parameters: min 256 KiB, average 1 MiB, max 4 MiB.
    public static let standard = ContentDefinedChunker(minSize: 256 << 10, averageSize: 1 << 20, maxSize: 4 << 20)

    /// No cut is made at or below this many bytes (except at the end of the data).
    public let minSize: Int
    /// The target chunk size; a power of two.
    public let averageSize: Int
    /// Chunks are cut at this size if no content-defined cut came first.
    public let maxSize: Int

    /// The mask used from `minSize` to `averageSize`: log2(averageSize) + 2 top bits.
    let strictMask: UInt64
    /// The mask used from `averageSize` to `maxSize`: log2(averageSize) - 2 top bits.
    let looseMask: UInt64

    /// The 256 gear values, one per byte value: `standardGearTable`, or a keyed table (a sealed
    /// container derives its own from its key, so the server cannot compute where cuts fall).
    public let gearTable: [UInt64]

    /// Precondition: `averageSize` is a power of two in 2^6 ... 2^30,
    /// `0 < minSize <= averageSize <= maxSize` with `minSize < maxSize`, and `gearTable` has 256
    /// values.
    public init(minSize: Int, averageSize: Int, maxSize: Int, gearTable: [UInt64] = standardGearTable) {
        precondition(gearTable.count == 256, "a gear table has 256 values")
        self.gearTable = gearTable
        precondition(averageSize >= 1 << 6 && averageSize <= 1 << 30, "averageSize out of range")
        precondition(averageSize & (averageSize - 1) == 0, "averageSize must be a power of two")
        precondition(minSize > 0 && minSize <= averageSize && averageSize <= maxSize, "need 0 < min <= average <= max")
        precondition(minSize < maxSize, "need min < max")
        self.minSize = minSize
        self.averageSize = averageSize
        self.maxSize = maxSize
        let bits = averageSize.trailingZeroBitCount
        self.strictMask = Self.topBits(bits + 2)
        self.looseMask = Self.topBits(bits - 2)
    }

    /// Length of the chunk that starts at buffer[0]. `buffer` holds at least `maxSize` bytes unless it is the end of
    /// the data.
    ///
    /// Returns a value in `1 ... min(buffer.count, maxSize)`, or 0 for an empty buffer. Only the first `maxSize` bytes
    /// are read, so the answer is the same for any buffer that starts with the same `maxSize` bytes.
    public func cutPoint(in buffer: UnsafeRawBufferPointer) -> Int {
        let count = buffer.count
        guard count > minSize, let base = buffer.baseAddress else { return count }
        let end = Swift.min(count, maxSize)
        let normalEnd = Swift.min(end, averageSize)
        let strictMask = self.strictMask
        let looseMask = self.looseMask
        return gearTable.withUnsafeBufferPointer { table in
            let gear = table.baseAddress!
            var fingerprint: UInt64 = 0
            var index = minSize
            while index < normalEnd {
                fingerprint = (fingerprint &<< 1) &+ gear[Int(base.load(fromByteOffset: index, as: UInt8.self))]
                index &+= 1
                if fingerprint & strictMask == 0 { return index }
            }
            while index < end {
                fingerprint = (fingerprint &<< 1) &+ gear[Int(base.load(fromByteOffset: index, as: UInt8.self))]
                index &+= 1
                if fingerprint & looseMask == 0 { return index }
            }
            return end
        }
    }

    /// A mask of the `count` most significant bits.
    private static func topBits(_ count: Int) -> UInt64 {
        ~UInt64(0) &<< UInt64(64 - count)
    }

    /// 256 pseudo-random 64-bit values, one per byte value: SplitMix64 from a fixed seed. Part of the format.
    public static let standardGearTable: [UInt64] = {
        var generator = SplitMix64(seed: 0x5359_4E43_4653_4344)  // "SYNCFSCD"
        return (0..<256).map { _ in generator.next() }
    }()
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny, well-mixed generator; here only a fixed source of table values.
private struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed &>> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed &>> 31)
    }
}
