/// A stretch of the base that one side or both changed, with what each side made of it.
struct MergeRegion: Equatable, Sendable {
    /// The base lines of the stretch (empty for an insertion).
    var base: Range<Int>
    /// Local's lines for the stretch (its changed lines, plus base lines it kept in between).
    var local: Range<Int>
    /// Remote's lines for the stretch.
    var remote: Range<Int>
    /// The local hunks inside the stretch (indexes into the local diff); empty: local kept the base.
    var localHunks: Range<Int>
    /// The remote hunks inside the stretch; empty: remote kept the base.
    var remoteHunks: Range<Int>

    var localChanged: Bool { !localHunks.isEmpty }
    var remoteChanged: Bool { !remoteHunks.isEmpty }
}

/// diff3's grouping of two diffs against one base into regions.
///
/// Two changes, one from each side, belong to one region when they **overlap**: their base ranges
/// share a line, or one is an insertion strictly inside the other's range, or both are insertions
/// at the same place. Regions are closed under this (a change overlapping any change of a region
/// joins it). Changes that only touch — one ends at the base line where the other starts, or an
/// insertion right before or after the other's lines — stay apart, so they merge cleanly; their
/// order in the result is the base order (an insertion comes before lines changed from the same
/// place).
///
/// One exception keeps every line on a line of its own: a side whose last line has no "\n" ends
/// the merged text with it, so an insertion at the very end of the base by the other side joins
/// the region of that side's last change (and so conflicts) instead of being glued to that line.
enum Diff3 {
    static func regions(
        baseCount: Int, local: [Hunk], remote: [Hunk], localOpenEnd: Bool, remoteOpenEnd: Bool
    ) -> [MergeRegion] {
        var regions: [MergeRegion] = []
        var nextLocal = 0
        var nextRemote = 0
        // Outside the hunks, side line = base line + delta.
        var localDelta = 0
        var remoteDelta = 0
        while nextLocal < local.count || nextRemote < remote.count {
            let localFirst =
                nextRemote == remote.count
                || (nextLocal < local.count && precedes(local[nextLocal].old, remote[nextRemote].old))
            let first = localFirst ? local[nextLocal] : remote[nextRemote]
            let low = first.old.lowerBound
            var high = first.old.upperBound
            let localStart = nextLocal
            let remoteStart = nextRemote
            if localFirst { nextLocal += 1 } else { nextRemote += 1 }
            // Takes the side's next hunk into the region when it overlaps it (or would be glued
            // to the other side's open last line).
            func absorb(_ hunks: [Hunk], _ next: inout Int, otherChanged: Bool, otherOpenEnd: Bool) -> Bool {
                guard next < hunks.count else { return false }
                let hunk = hunks[next].old
                guard overlaps(low..<high, hunk) || gluedAtEnd(hunk, high, baseCount, otherChanged && otherOpenEnd)
                else { return false }
                high = max(high, hunk.upperBound)
                next += 1
                return true
            }
            var grew = true
            while grew {
                let grewLocal = absorb(
                    local, &nextLocal, otherChanged: remoteStart < nextRemote, otherOpenEnd: remoteOpenEnd)
                let grewRemote = absorb(
                    remote, &nextRemote, otherChanged: localStart < nextLocal, otherOpenEnd: localOpenEnd)
                grew = grewLocal || grewRemote
            }
            let localRange = sideRange(low..<high, local[localStart..<nextLocal], delta: localDelta)
            let remoteRange = sideRange(low..<high, remote[remoteStart..<nextRemote], delta: remoteDelta)
            localDelta = localRange.upperBound - high
            remoteDelta = remoteRange.upperBound - high
            regions.append(
                MergeRegion(
                    base: low..<high, local: localRange, remote: remoteRange,
                    localHunks: localStart..<nextLocal, remoteHunks: remoteStart..<nextRemote))
        }
        return regions
    }

    /// Whether two base ranges overlap: they share a line, or one is an insertion strictly inside
    /// the other, or both are insertions at the same place.
    static func overlaps(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        (a.lowerBound < b.upperBound && b.lowerBound < a.upperBound)
            || (a.isEmpty && b.isEmpty && a.lowerBound == b.lowerBound)
    }

    /// Whether `a` comes first in base order: it starts earlier, or at the same place as an
    /// insertion before lines changed from there.
    private static func precedes(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        a.lowerBound < b.lowerBound || (a.lowerBound == b.lowerBound && a.isEmpty)
    }

    /// An insertion at the end of the base right after a region that ends the other side's text
    /// without a final "\n".
    private static func gluedAtEnd(_ hunk: Range<Int>, _ regionEnd: Int, _ baseCount: Int, _ otherOpen: Bool) -> Bool {
        otherOpen && hunk.isEmpty && hunk.lowerBound == baseCount && regionEnd == baseCount
    }

    /// A side's lines for the base stretch `base`, given that side's hunks inside it.
    private static func sideRange(_ base: Range<Int>, _ hunks: ArraySlice<Hunk>, delta: Int) -> Range<Int> {
        guard let first = hunks.first, let last = hunks.last else {
            return (base.lowerBound + delta)..<(base.upperBound + delta)
        }
        let start = first.new.lowerBound - (first.old.lowerBound - base.lowerBound)
        let end = last.new.upperBound + (base.upperBound - last.old.upperBound)
        return start..<end
    }
}
