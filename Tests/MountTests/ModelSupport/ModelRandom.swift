import Foundation

/// SplitMix64: a tiny deterministic PRNG, so a failing run can be replayed from its seed.
struct ModelRandom: RandomNumberGenerator, Sendable {
    private(set) var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in 0..<n (n > 0).
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    /// Uniform in range.
    mutating func int(_ r: ClosedRange<Int>) -> Int { r.lowerBound + below(r.count) }

    /// true with probability p.
    mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }

    mutating func pick<T>(_ xs: [T]) -> T { xs[below(xs.count)] }

    /// Picks an index by weights.
    mutating func weighted(_ weights: [Int]) -> Int {
        let total = weights.reduce(0, +)
        var r = below(total)
        for (i, w) in weights.enumerated() {
            if r < w { return i }
            r -= w
        }
        return weights.count - 1
    }

    mutating func bytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        var i = 0
        while i < n {
            var w = next()
            for _ in 0..<8 where i < n {
                out[i] = UInt8(truncatingIfNeeded: w)
                w >>= 8
                i += 1
            }
        }
        return out
    }

    /// Seed from an environment variable (decimal or 0x-hex), else the given default.
    static func seed(env name: String, default value: UInt64) -> UInt64 {
        guard let s = ProcessInfo.processInfo.environment[name], !s.isEmpty else { return value }
        if s.hasPrefix("0x") || s.hasPrefix("0X") { return UInt64(s.dropFirst(2), radix: 16) ?? value }
        return UInt64(s) ?? value
    }
}

/// FNV-1a 64-bit hash of bytes (content identity in tree snapshots).
enum ModelHash {
    static func fnv1a(_ bytes: UnsafeRawBufferPointer, into h: inout UInt64) {
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01B3
        }
    }

    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        bytes.withUnsafeBytes { fnv1a($0, into: &h) }
        return h
    }

    static func hex(_ h: UInt64) -> String {
        let s = String(h, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
