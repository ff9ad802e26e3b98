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
