import Testing

@testable import SyncMerge

@Suite("ThreeWayMerge.text")
struct TextMergeTests {
    static let cases: [MergeCase] = [
        MergeCase(
            name: "non-overlapping edits", base: "a\nb\nc\nd\ne\n", local: "A\nb\nc\nd\ne\n", remote: "a\nb\nc\nd\nE\n",
            expected: "A\nb\nc\nd\nE\n"),
        MergeCase(
            name: "adjacent edits merge", base: "a\nb\nc\n", local: "A\nb\nc\n", remote: "a\nB\nc\n",
            expected: "A\nB\nc\n"),
        MergeCase(
            name: "adjacent deletions merge", base: "a\nb\nc\nd\n", local: "a\nc\nd\n", remote: "a\nb\nd\n",
            expected: "a\nd\n"),
        MergeCase(
            name: "insertion right after a change", base: "a\nb\n", local: "A\nb\n", remote: "a\nx\nb\n",
            expected: "A\nx\nb\n"),
        MergeCase(
            name: "insertion right before a change", base: "a\nb\n", local: "a\nB\n", remote: "a\nx\nb\n",
            expected: "a\nx\nB\n"),
        MergeCase(
            name: "overlapping different edits", base: "a\nb\nc\n", local: "a\nX\nc\n", remote: "a\nY\nc\n",
            expected: nil),
        MergeCase(
            name: "edits overlapping in part", base: "a\nb\nc\nd\n", local: "a\nX\nY\nd\n", remote: "a\nb\nZ\nd\n",
            expected: nil),
        MergeCase(
            name: "identical edits count once", base: "a\nb\nc\nd\n", local: "a\nX\nc\nD\n", remote: "a\nX\nc\nd\n",
            expected: "a\nX\nc\nD\n"),
        MergeCase(
            name: "insertions at the same place", base: "a\nb\n", local: "a\nx\nb\n", remote: "a\ny\nb\n",
            expected: nil),
        MergeCase(
            name: "identical insertions at the same place", base: "a\nb\nc\n", local: "a\nx\nb\nc\n",
            remote: "a\nx\nb\nC\n", expected: "a\nx\nb\nC\n"),
        MergeCase(
            name: "insertion inside the other side's change", base: "a\nb\nc\nd\n", local: "a\nB\nC\nd\n",
            remote: "a\nb\nx\nc\nd\n", expected: nil),
        MergeCase(
            name: "deleted on one side, edited on the other", base: "a\nb\nc\n", local: "a\nc\n", remote: "a\nB\nc\n",
            expected: nil),
        MergeCase(
            name: "deleted on both sides", base: "a\nb\nc\nd\n", local: "a\nc\nd\n", remote: "a\nc\nD\n",
            expected: "a\nc\nD\n"),
        MergeCase(name: "empty base, different additions", base: "", local: "x\n", remote: "y\n", expected: nil),
        MergeCase(name: "empty base, same additions", base: "", local: "x\ny\n", remote: "x\ny\n", expected: "x\ny\n"),
        MergeCase(name: "empty base, local empty", base: "", local: "", remote: "y\n", expected: "y\n"),
        MergeCase(name: "everything deleted vs an edit", base: "a\nb\n", local: "", remote: "a\nB\n", expected: nil),
        MergeCase(name: "everything deleted vs nothing", base: "a\nb\n", local: "", remote: "a\nb\n", expected: ""),
        MergeCase(
            name: "both emptied the file", base: "a\nb\n", local: "", remote: "", expected: ""),
        MergeCase(
            name: "only the final newline added", base: "a\nb\nc", local: "a\nb\nc\n", remote: "A\nb\nc",
            expected: "A\nb\nc\n"),
        MergeCase(
            name: "final newline added vs a line appended", base: "a\nb", local: "a\nb\n", remote: "a\nb\nc\n",
            expected: nil),
        MergeCase(
            name: "last line changed vs a line appended", base: "a\nb\n", local: "a\nB\n", remote: "a\nb\nc\n",
            expected: "a\nB\nc\n"),
        MergeCase(
            name: "an append is never glued to a last line without newline", base: "a\nb\n", local: "a\nB",
            remote: "a\nb\nc\n", expected: nil),
        MergeCase(
            name: "the same, the other way round", base: "a\nb\n", local: "a\nb\nc\n", remote: "a\nB",
            expected: nil),
        MergeCase(
            name: "CRLF lines", base: "a\r\nb\r\nc\r\n", local: "A\r\nb\r\nc\r\n", remote: "a\r\nb\r\nC\r\n",
            expected: "A\r\nb\r\nC\r\n"),
        MergeCase(
            name: "a changed line ending is a change", base: "a\r\nb\r\n", local: "a\nb\r\n", remote: "a\r\nB\r\n",
            expected: "a\nB\r\n"),
        MergeCase(
            name: "line endings changed differently", base: "a\r\nb\n", local: "a\nb\n", remote: "A\r\nb\n",
            expected: nil),
        MergeCase(
            name: "mixed line endings kept as they are", base: "a\r\nb\nc\r\n", local: "a\r\nB\nc\r\n",
            remote: "a\r\nb\nc\r\nd\n", expected: "a\r\nB\nc\r\nd\n"),
        MergeCase(
            name: "multi-byte UTF-8", base: "café\nnaïve\n日本\n", local: "café\nnaïve!\n日本\n",
            remote: "Café\nnaïve\n日本語\n", expected: "Café\nnaïve!\n日本語\n"),
        MergeCase(
            name: "combining characters compare as bytes", base: "e\u{301}\nx\n", local: "\u{E9}\nx\n",
            remote: "e\u{301}\ny\n", expected: "\u{E9}\ny\n"),
        MergeCase(
            name: "canonically equal lines still differ", base: "a\nx\n", local: "\u{E9}\nx\n",
            remote: "e\u{301}\nx\n", expected: nil),
        MergeCase(
            name: "repeated lines", base: "x\nx\nx\nx\n", local: "x\ny\nx\nx\nx\n", remote: "x\nx\nx\nx\nz\n",
            expected: "x\ny\nx\nx\nx\nz\n"),
        MergeCase(
            name: "no newline anywhere", base: "a", local: "b", remote: "c", expected: nil),
    ]

    @Test(arguments: cases)
    func diff3(_ example: MergeCase) {
        let result = ThreeWayMerge.text(
            base: bytes(example.base), local: bytes(example.local), remote: bytes(example.remote), markers: false)
        #expect(text(result.outcome) == example.expected)
        #expect(result.hadConflicts == (example.expected == nil))
    }

    @Test(arguments: cases)
    func mergeIsSymmetricUpToMarkers(_ example: MergeCase) {
        // Swapping the sides gives the same clean result (or the same conflict).
        let swapped = ThreeWayMerge.text(
            base: bytes(example.base), local: bytes(example.remote), remote: bytes(example.local), markers: false)
        #expect(text(swapped.outcome) == example.expected)
    }

    @Test func markersAreWrittenGitStyle() {
        let result = ThreeWayMerge.text(
            base: bytes("a\nb\nc\nd\ne\n"), local: bytes("A\nb\nX\nd\ne\n"), remote: bytes("a\nb\nY\nd\nE\n"),
            markers: true)
        #expect(result.hadConflicts)
        #expect(
            text(result.outcome)
                == "A\nb\n<<<<<<< local\nX\n||||||| base\nc\n=======\nY\n>>>>>>> remote\nd\nE\n")
    }

    @Test func markersUseTheDominantLineEnding() {
        let result = ThreeWayMerge.text(
            base: bytes("a\r\nb\r\nc\n"), local: bytes("a\r\nX\r\nc\n"), remote: bytes("a\r\nY\r\nc\n"), markers: true)
        #expect(
            text(result.outcome)
                == "a\r\n<<<<<<< local\r\nX\r\n||||||| base\r\nb\r\n=======\r\nY\r\n>>>>>>> remote\r\nc\n")
    }

    @Test func markersEndSectionsWithoutNewline() {
        let result = ThreeWayMerge.text(base: bytes("a\nb"), local: bytes("a\nX"), remote: bytes("a\n"), markers: true)
        #expect(text(result.outcome) == "a\n<<<<<<< local\nX\n||||||| base\nb\n=======\n>>>>>>> remote\n")
        let inserted = ThreeWayMerge.text(base: bytes(""), local: bytes("x"), remote: bytes("y\n"), markers: true)
        #expect(text(inserted.outcome) == "<<<<<<< local\nx\n||||||| base\n=======\ny\n>>>>>>> remote\n")
    }

    @Test func markersWithoutConflictChangeNothing() {
        let result = ThreeWayMerge.text(
            base: bytes("a\nb\nc\n"), local: bytes("A\nb\nc\n"), remote: bytes("a\nb\nC\n"), markers: true)
        #expect(result == TextMergeResult(outcome: .merged(bytes("A\nb\nC\n")), hadConflicts: false))
    }

    @Test func conflictWithoutMarkersIsConflicted() {
        let result = ThreeWayMerge.text(base: bytes("a\n"), local: bytes("b\n"), remote: bytes("c\n"), markers: false)
        #expect(result == TextMergeResult(outcome: .conflicted, hadConflicts: true))
    }

    @Test func binaryBytesMergeByNewlines() {
        // The merge itself works on any bytes; MergeRules keeps binary files away from it.
        let base: [UInt8] = [0, 0xFF, 0x0A, 1, 0x0A, 2, 0x0A]
        let local: [UInt8] = [0, 0xFE, 0x0A, 1, 0x0A, 2, 0x0A]
        let remote: [UInt8] = [0, 0xFF, 0x0A, 1, 0x0A, 3, 0x0A]
        let result = ThreeWayMerge.text(base: base, local: local, remote: remote, markers: false)
        #expect(result.outcome == .merged([0, 0xFE, 0x0A, 1, 0x0A, 3, 0x0A]))
    }

    @Test func totallyDifferentSidesWithACappedDiffConflict() {
        let base = (0..<300).map { "b\($0)\n" }.joined()
        let local = (0..<300).map { "l\($0)\n" }.joined()
        let remote = "b0\n" + (1..<300).map { "r\($0)\n" }.joined()
        let capped = ThreeWayMerge.text(
            base: bytes(base), local: bytes(local), remote: bytes(remote), markers: false, budget: 10)
        #expect(capped.outcome == .conflicted)
        // One side rewritten, the other unchanged but for the first line: the cap only coarsens.
        let oneSided = ThreeWayMerge.text(
            base: bytes(base), local: bytes("B0\n" + base.dropFirst(3)), remote: bytes(base + "tail\n"),
            markers: false, budget: 10)
        #expect(text(oneSided.outcome) == "B0\n" + base.dropFirst(3) + "tail\n")
    }
}
