import Testing

@testable import SyncMerge

@Suite("ThreeWayMerge.union")
struct UnionMergeTests {
    static let cases: [MergeCase] = [
        MergeCase(
            name: "both appended", base: "a\nb\n", local: "a\nb\nc\n", remote: "a\nb\nd\n", expected: "a\nb\nc\nd\n"),
        MergeCase(
            name: "a line both added appears once", base: "a\nb\n", local: "a\nb\nc\nx\n", remote: "a\nb\nc\ny\n",
            expected: "a\nb\nc\nx\ny\n"),
        MergeCase(
            name: "a deletion applies where the other side changed nothing", base: "a\nb\nc\n", local: "a\nc\n",
            remote: "a\nb\nc\nd\n", expected: "a\nc\nd\n"),
        MergeCase(
            name: "deleted vs changed keeps the change", base: "a\nb\nc\n", local: "a\nc\n", remote: "a\nB\nc\n",
            expected: "a\nB\nc\n"),
        MergeCase(
            name: "both changed a line: local's, then remote's", base: "a\nb\nc\n", local: "a\nX\nc\n",
            remote: "a\nY\nc\n", expected: "a\nX\nY\nc\n"),
        MergeCase(
            name: "base lines local replaced stay replaced", base: "a\nb\nc\n", local: "a\nC\n", remote: "a\nB\nc\n",
            expected: "a\nC\nB\n"),
        MergeCase(
            name: "identical additions once, others in order", base: "a\nb\n", local: "a\nx\nb\nL\n",
            remote: "a\nx\nb\nR\n", expected: "a\nx\nb\nL\nR\n"),
        MergeCase(name: "empty base", base: "", local: "x\n", remote: "y\n", expected: "x\ny\n"),
        MergeCase(
            name: "a last line without newline gets one before remote's lines", base: "a\n", local: "a\nb",
            remote: "a\nc\n", expected: "a\nb\nc\n"),
        MergeCase(
            name: "that newline is the dominant one", base: "a\r\n", local: "a\r\nb", remote: "a\r\nc\r\n",
            expected: "a\r\nb\r\nc\r\n"),
        MergeCase(
            name: "remote's last line keeps its missing newline", base: "a\n", local: "a\nb\n", remote: "a\nc",
            expected: "a\nb\nc"),
        MergeCase(
            name: "non-overlapping changes merge as in text", base: "a\nb\nc\nd\n", local: "A\nb\nc\nd\n",
            remote: "a\nb\nc\nD\n", expected: "A\nb\nc\nD\n"),
    ]

    @Test(arguments: cases)
    func union(_ example: MergeCase) {
        let result = ThreeWayMerge.union(
            base: bytes(example.base), local: bytes(example.local), remote: bytes(example.remote))
        #expect(String(decoding: result, as: UTF8.self) == example.expected)
    }

    @Test func keepsEveryLineOfBothLogs() {
        let base = (0..<50).map { "entry \($0)\n" }.joined()
        let local = base + (0..<5).map { "local \($0)\n" }.joined()
        let remote = base + (0..<7).map { "remote \($0)\n" }.joined()
        let merged = String(
            decoding: ThreeWayMerge.union(base: bytes(base), local: bytes(local), remote: bytes(remote)), as: UTF8.self)
        #expect(merged == local + (0..<7).map { "remote \($0)\n" }.joined())
    }
}
