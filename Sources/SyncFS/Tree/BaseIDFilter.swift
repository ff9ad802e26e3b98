import SyncBackend

/// The file IDs that may have a committed sync base: a Bloom filter, so that `SyncBases` can
/// answer "none" without asking the database for an ID never given a base — every new entry of a
/// first attach or a catch-up, which would otherwise read a row that is not there.
///
/// Contract: `mayContain` is true for every ID inserted (no false negatives); for others it is
/// true about 1 % of the time (a needless read, never a wrong answer). IDs are never removed: a
/// removed base only costs that read. The filter grows by layers, each twice the size of the one
/// before, so it needs no count up front: about 10 bits per ID, 1.3 MB at 1,000,000.
/// Positions come from Swift's `Hasher`, seeded per process: IDs chosen by another device or a
/// hostile server cannot be made to collide on purpose.
struct BaseIDFilter {
    private struct Layer {
        var words: [UInt64]
        /// IDs this layer holds before the next one is added (10 bits each).
        let capacity: Int
        var count = 0

        init(capacity: Int) {
            self.capacity = capacity
            words = [UInt64](repeating: 0, count: (capacity * Self.bitsPerID + 63) / 64)
        }

        static let bitsPerID = 10
        /// Bits set per ID: ln 2 × bits per ID, rounded (a false positive rate of about 0.8 %).
        static let probes = 7

        /// Bit `probe` of `hash` (double hashing: `h1 + probe × h2`, modulo the layer's bits).
        static func bit(_ probe: UInt64, of hash: UInt64, in bitCount: UInt64) -> Int {
            Int(((hash & 0xFFFF_FFFF) &+ probe &* ((hash >> 32) | 1)) % bitCount)
        }

        mutating func insert(_ hash: UInt64) {
            let bitCount = UInt64(words.count) * 64
            for probe in 0..<UInt64(Self.probes) {
                let bit = Self.bit(probe, of: hash, in: bitCount)
                words[bit >> 6] |= 1 << UInt64(bit & 63)
            }
            count += 1
        }

        func mayContain(_ hash: UInt64) -> Bool {
            let bitCount = UInt64(words.count) * 64
            for probe in 0..<UInt64(Self.probes) {
                let bit = Self.bit(probe, of: hash, in: bitCount)
                if words[bit >> 6] & (1 << UInt64(bit & 63)) == 0 { return false }
            }
            return true
        }
    }

    private var layers: [Layer]

    /// The first layer's capacity: 65,536 IDs, 80 KiB.
    static let firstCapacity = 65_536

    init() { layers = [Layer(capacity: Self.firstCapacity)] }

    /// How many IDs were inserted (tests).
    var count: Int { layers.reduce(0) { $0 + $1.count } }
    /// The bytes the filter's bits take (tests: about 10 bits per ID).
    var byteCount: Int { layers.reduce(0) { $0 + $1.words.count * 8 } }

    mutating func insert(_ id: FileID) {
        let last = layers.count - 1
        if layers[last].count >= layers[last].capacity {
            layers.append(Layer(capacity: layers[last].capacity * 2))
        }
        layers[layers.count - 1].insert(Self.hash(id))
    }

    func mayContain(_ id: FileID) -> Bool {
        let hash = Self.hash(id)
        return layers.contains { $0.mayContain(hash) }
    }

    private static func hash(_ id: FileID) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(id)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }
}
