import Foundation

/// The diff of two texts by lines: Myers (`MyersDiff`) over line hashes, every matched run then
/// checked byte for byte; should two different lines ever share a hash and be matched, the diff
/// is redone over exact line IDs (`LineInterner`). So lines compare exactly, at the cost of one
/// sequential hashing pass instead of a hash-table lookup per line.
enum LineDiff {
    static func diff(_ a: Lines, _ b: Lines, budget: Int = MyersDiff.defaultBudget) -> [Hunk] {
        diff(a, LineHash.hashes(a), b, LineHash.hashes(b), budget: budget)
    }

    /// With the hashes of both texts (`LineHash.hashes`, or anything equal for equal lines).
    static func diff(_ a: Lines, _ aHashes: [UInt64], _ b: Lines, _ bHashes: [UInt64], budget: Int) -> [Hunk] {
        let hunks = MyersDiff.diff(aHashes, bHashes, budget: budget)
        if matchesAreExact(hunks, a, b) { return hunks }
        let ids = LineInterner.ids([a, b])
        return MyersDiff.diff(ids[0], ids[1], budget: budget)
    }

    /// Whether the lines the hunks leave unchanged are equal byte for byte (each run between two
    /// hunks compared as one block of bytes).
    static func matchesAreExact(_ hunks: [Hunk], _ a: Lines, _ b: Lines) -> Bool {
        var aLine = 0
        var bLine = 0
        for hunk in hunks + [Hunk(old: a.count..<a.count, new: b.count..<b.count)] {
            let run = hunk.old.lowerBound - aLine
            guard run == hunk.new.lowerBound - bLine else { return false }
            if run > 0 && !equal(a.bytes(of: aLine..<hunk.old.lowerBound), b.bytes(of: bLine..<hunk.new.lowerBound)) {
                return false
            }
            aLine = hunk.old.upperBound
            bLine = hunk.new.upperBound
        }
        return true
    }

    private static func equal(_ x: ArraySlice<UInt8>, _ y: ArraySlice<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        return x.withUnsafeBufferPointer { x in
            y.withUnsafeBufferPointer { y in memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
    }
}
