import Foundation
import TestSupport
import Testing

@testable import SyncMerge

/// Merges of generated ~10 MB texts (200,000 lines): exact results here; timings with
/// `SYNCFS_MERGE_BENCH=1` (see `benchmark`).
@Suite("Large merges")
struct LargeMergeTests {
    static let lineCount = 200_000

    /// `count` distinct lines of about 51 bytes.
    static func generatedLines(count: Int, seed: UInt64) -> [[UInt8]] {
        var random = SeededGenerator(seed: seed)
        let letters = Array("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        return (0..<count).map { index in
            var line = Array("\(index): ".utf8)
            for _ in 0..<6 {
                var word = random.next()
                for _ in 0..<7 {
                    line.append(letters[Int(word % UInt64(letters.count))])
                    word /= UInt64(letters.count)
                }
            }
            line.append(0x0A)
            return line
        }
    }

    /// Edits near the start for local, near the end for remote: a replaced line, three inserted
    /// lines, five deleted lines each.
    static func edited(_ lines: [[UInt8]], near start: Bool) -> [[UInt8]] {
        var lines = lines
        let at = start ? 10 : lines.count - 600
        let side = start ? "local" : "remote"
        lines.removeSubrange((at + 490)..<(at + 495))
        lines.insert(contentsOf: (0..<3).map { Array("inserted by \(side) \($0)\n".utf8) }, at: at + 90)
        lines[at] = Array("changed by \(side)\n".utf8)
        return lines
    }

    static let base = generatedLines(count: lineCount, seed: 1)

    @Test func tenMegabytesWithEditsAtBothEnds() {
        let local = Self.edited(Self.base, near: true)
        let remote = Self.edited(Self.base, near: false)
        let expected = Self.edited(local, near: false)
        let baseBytes = Self.base.flatMap { $0 }
        #expect(baseBytes.count > 10_000_000)
        let result = ThreeWayMerge.text(
            base: baseBytes, local: local.flatMap { $0 }, remote: remote.flatMap { $0 }, markers: false)
        #expect(result == TextMergeResult(outcome: .merged(expected.flatMap { $0 }), hadConflicts: false))
    }

    /// Every `step`th line from `offset` changed.
    static func scattered(_ lines: [[UInt8]], offset: Int, step: Int = 1000, side: String) -> [[UInt8]] {
        var lines = lines
        for index in stride(from: offset, to: lines.count, by: step) { lines[index] = Array("\(side) \(index)\n".utf8) }
        return lines
    }

    @Test func tenMegabytesWithScatteredEdits() {
        let local = Self.scattered(Self.base, offset: 0, side: "local")
        let remote = Self.scattered(Self.base, offset: 500, side: "remote")
        let expected = Self.scattered(local, offset: 500, side: "remote")
        let result = ThreeWayMerge.text(
            base: Self.base.flatMap { $0 }, local: local.flatMap { $0 }, remote: remote.flatMap { $0 }, markers: false)
        #expect(result.outcome == .merged(expected.flatMap { $0 }))
    }

    /// 1,333 lines changed on each side, interleaved: still within the diff's work cap.
    @Test func tenMegabytesWithManyScatteredEdits() {
        let local = Self.scattered(Self.base, offset: 0, step: 150, side: "local")
        let remote = Self.scattered(Self.base, offset: 75, step: 150, side: "remote")
        let expected = Self.scattered(local, offset: 75, step: 150, side: "remote")
        let result = ThreeWayMerge.text(
            base: Self.base.flatMap { $0 }, local: local.flatMap { $0 }, remote: remote.flatMap { $0 }, markers: false)
        #expect(result.outcome == .merged(expected.flatMap { $0 }))
    }

    /// Prints merge timings; run in a release build:
    /// `SYNCFS_MERGE_BENCH=1 swift test -c release --filter SyncMergeTests.LargeMergeTests/benchmark`
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SYNCFS_MERGE_BENCH"] != nil))
    func benchmark() {
        let base = Self.base.flatMap { $0 }
        let ends = (
            Self.edited(Self.base, near: true).flatMap { $0 }, Self.edited(Self.base, near: false).flatMap { $0 }
        )
        let scattered = (
            Self.scattered(Self.base, offset: 0, side: "local").flatMap { $0 },
            Self.scattered(Self.base, offset: 500, side: "remote").flatMap { $0 }
        )
        let other = (
            Self.generatedLines(count: Self.lineCount, seed: 2).flatMap { $0 },
            Self.generatedLines(count: Self.lineCount, seed: 3).flatMap { $0 }
        )
        func measure(_ name: String, _ local: [UInt8], _ remote: [UInt8]) {
            var best = Duration.seconds(1000)
            var conflicted = false
            for _ in 0..<5 {
                let clock = ContinuousClock()
                let start = clock.now
                let texts = [base, local, remote].allSatisfy(ContentSniffer.isText)
                let result = ThreeWayMerge.text(base: base, local: local, remote: remote, markers: false)
                best = min(best, clock.now - start)
                conflicted = result.outcome == .conflicted || !texts
            }
            print("merge bench: \(name): \(best) (best of 5, isText + text merge\(conflicted ? ", conflicted" : ""))")
        }
        print("merge bench: base \(base.count) bytes, \(Self.lineCount) lines")
        measure("edits near start (local) and end (remote)", ends.0, ends.1)
        measure("200 edits per side, interleaved", scattered.0, scattered.1)
        measure("both sides rewritten (work cap)", other.0, other.1)
    }
}
