import Testing

@testable import SyncMerge

/// The UTF-8 bytes of a string.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A merge outcome as text, or nil when conflicted (for readable expectations).
func text(_ outcome: MergeOutcome) -> String? {
    guard case .merged(let result) = outcome else { return nil }
    return String(decoding: result, as: UTF8.self)
}

/// One merge example: the three versions and the expected result (nil: a conflict).
struct MergeCase: Sendable, CustomTestStringConvertible {
    var name: String
    var base: String
    var local: String
    var remote: String
    var expected: String?

    var testDescription: String { name }
}

/// A deterministic pseudo-random generator (SplitMix64), so generated tests are reproducible.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
