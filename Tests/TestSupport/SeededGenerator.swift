import Foundation

/// The tests' one seeded pseudo-random generator (SplitMix64): tiny, fast and deterministic, so a
/// generated test is reproducible and a failing run can be replayed from its seed.
///
/// Not for anything that must be unpredictable (tokens, IDs): it is a test fixture.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in 0..<n (n > 0).
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    /// Uniform in range.
    public mutating func int(_ r: ClosedRange<Int>) -> Int { r.lowerBound + below(r.count) }

    /// true with probability p.
    public mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }

    public mutating func pick<T>(_ xs: [T]) -> T { xs[below(xs.count)] }

    /// Picks an index by weights.
    public mutating func weighted(_ weights: [Int]) -> Int {
        let total = weights.reduce(0, +)
        var r = below(total)
        for (i, w) in weights.enumerated() {
            if r < w { return i }
            r -= w
        }
        return weights.count - 1
    }

    /// `n` bytes: each `next()` gives eight, least significant first.
    public mutating func bytes(_ n: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: n) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var offset = 0
            while offset < n {
                let word = next().littleEndian
                let take = min(8, n - offset)
                withUnsafeBytes(of: word) { bytes in
                    raw.baseAddress!.advanced(by: offset).copyMemory(from: bytes.baseAddress!, byteCount: take)
                }
                offset += take
            }
            initialized = n
        }
    }

    /// `count` bytes that do not compress, the same for the same seed and different for another.
    public static func bytes(count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return generator.bytes(count)
    }

    /// Seed from an environment variable (decimal or 0x-hex), else the given default.
    public static func seed(env name: String, default value: UInt64) -> UInt64 {
        guard let s = ProcessInfo.processInfo.environment[name], !s.isEmpty else { return value }
        if s.hasPrefix("0x") || s.hasPrefix("0X") { return UInt64(s.dropFirst(2), radix: 16) ?? value }
        return UInt64(s) ?? value
    }
}
