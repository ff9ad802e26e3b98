import TestSupport
import Testing

@testable import SyncMerge

@Suite("MyersDiff")
struct MyersDiffTests {
    /// Applies hunks to `a`.
    static func apply(_ hunks: [Hunk], _ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var result: [UInt64] = []
        var cursor = 0
        for hunk in hunks {
            result += a[cursor..<hunk.old.lowerBound]
            result += b[hunk.new]
            cursor = hunk.old.upperBound
        }
        return result + a[cursor...]
    }

    /// The length of a longest common subsequence, by dynamic programming.
    static func lcs(_ a: [UInt64], _ b: [UInt64]) -> Int {
        var previous = [Int](repeating: 0, count: b.count + 1)
        for x in a {
            var row = [0]
            for (j, y) in b.enumerated() { row.append(x == y ? previous[j] + 1 : max(previous[j + 1], row[j])) }
            previous = row
        }
        return previous[b.count]
    }

    @Test func randomDiffsAreValidAndMinimal() {
        var random = SeededGenerator(seed: 42)
        for round in 0..<600 {
            let alphabet = UInt64.random(in: 1...(round % 3 == 0 ? 2 : 6), using: &random)
            let a = (0..<Int.random(in: 0...30, using: &random)).map { _ in
                UInt64.random(in: 0..<alphabet, using: &random)
            }
            var b = a
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                if !b.isEmpty && Bool.random(using: &random) {
                    b.remove(at: Int.random(in: 0..<b.count, using: &random))
                } else {
                    b.insert(
                        UInt64.random(in: 0..<alphabet, using: &random), at: Int.random(in: 0...b.count, using: &random)
                    )
                }
            }
            let hunks = MyersDiff.diff(a, b)
            #expect(Self.apply(hunks, a, b) == b, "a \(a) b \(b)")
            let edits = hunks.reduce(0) { $0 + $1.old.count + $1.new.count }
            #expect(edits == a.count + b.count - 2 * Self.lcs(a, b), "a \(a) b \(b)")
            for (first, second) in zip(hunks, hunks.dropFirst()) {
                #expect(first.old.upperBound < second.old.lowerBound && first.new.upperBound < second.new.lowerBound)
            }
        }
    }

    @Test func identicalAndEmpty() {
        #expect(MyersDiff.diff([1, 2, 3], [1, 2, 3]).isEmpty)
        #expect(MyersDiff.diff([], []).isEmpty)
        #expect(MyersDiff.diff([], [1, 2]) == [Hunk(old: 0..<0, new: 0..<2)])
        #expect(MyersDiff.diff([1, 2], []) == [Hunk(old: 0..<2, new: 0..<0)])
        #expect(MyersDiff.diff([1, 2, 3], [1, 9, 3]) == [Hunk(old: 1..<2, new: 1..<2)])
    }

    @Test func exhaustedBudgetMakesTheMiddleOneHunk() {
        let a: [UInt64] = [0] + Array(1...200) + [0]
        let b: [UInt64] = [0] + Array(301...500) + [0]
        #expect(MyersDiff.diff(a, b, budget: 100) == [Hunk(old: 1..<201, new: 1..<201)])
        // Still a correct diff when the budget runs out below the top level.
        var random = SeededGenerator(seed: 7)
        let c = (0..<400).map { _ in UInt64.random(in: 0..<4, using: &random) }
        let d = (0..<400).map { _ in UInt64.random(in: 0..<4, using: &random) }
        for budget in [0, 50, 500, 5000] {
            #expect(Self.apply(MyersDiff.diff(c, d, budget: budget), c, d) == d)
        }
    }
}

@Suite("LineDiff")
struct LineDiffTests {
    @Test func diffsLinesByteForByte() {
        let a = Lines(bytes("a\nb\r\nc\nd"))
        let b = Lines(bytes("a\nb\nc\nd\n"))
        #expect(LineDiff.diff(a, b) == [Hunk(old: 1..<2, new: 1..<2), Hunk(old: 3..<4, new: 3..<4)])
    }

    @Test func collidingHashesFallBackToExactLines() {
        // Every line "hashes" to 0, so the hash diff matches lines that differ; the check finds it.
        let a = Lines(bytes("a\nb\nc\n"))
        let b = Lines(bytes("a\nX\nc\nd\n"))
        let hunks = LineDiff.diff(a, [0, 0, 0], b, [0, 0, 0, 0], budget: MyersDiff.defaultBudget)
        #expect(hunks == [Hunk(old: 1..<2, new: 1..<2), Hunk(old: 3..<3, new: 3..<4)])
        #expect(!LineDiff.matchesAreExact([Hunk(old: 3..<3, new: 3..<4)], a, b))
        #expect(LineDiff.matchesAreExact(hunks, a, b))
    }
}
