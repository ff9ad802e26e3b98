extension ThreeWayMerge {
    /// diff3-style line merge.
    ///
    /// Lines split after "\n" (a last line without newline is a line too; CRLF lines are lines
    /// ending in "\r\n"; lines compare byte for byte, so Unicode needs no normalization and a
    /// line differing only in its ending differs). Each side is diffed against the base (Myers,
    /// with the work cap of `MyersDiff`); the changes are grouped into regions (`Diff3`):
    /// - a region only one side changed takes that side's lines;
    /// - a region both sides changed to the same lines takes them once;
    /// - a region both sides changed differently is a conflict.
    ///
    /// Changes that overlap in the base conflict: the same base line changed or deleted on both
    /// sides, an insertion inside lines the other side changed, or insertions at the same place
    /// (their order is unknowable) unless identical. Changes to neighbouring lines merge cleanly
    /// (git conflicts there): in a synced folder the usual case is two people editing consecutive
    /// items of a list, and a conflict would cost them a conflict copy to reconcile by hand, while
    /// the merge keeps both edits exactly as made. One exception (see `Diff3`): lines appended at
    /// the end by one side conflict with the other side's last change when that side's last line
    /// has no "\n", rather than being glued to it.
    ///
    /// Without markers a conflict makes the outcome `.conflicted`. With `markers: true` each
    /// conflicting region is written git-style, diff3 flavour:
    /// ```
    /// <<<<<<< local
    /// (local's lines)
    /// ||||||| base
    /// (the base's lines)
    /// =======
    /// (remote's lines)
    /// >>>>>>> remote
    /// ```
    /// each marker line ending with the dominant line ending of the three versions ("\r\n" when
    /// more of their lines end so than in a bare "\n"); a section whose last line has no "\n" gets
    /// that ending before the next marker. The outcome is then `.merged` and `hadConflicts` says
    /// markers were written.
    public static func text(base: [UInt8], local: [UInt8], remote: [UInt8], markers: Bool) -> TextMergeResult {
        text(base: base, local: local, remote: remote, markers: markers, budget: MyersDiff.defaultBudget)
    }

    static func text(base: [UInt8], local: [UInt8], remote: [UInt8], markers: Bool, budget: Int) -> TextMergeResult {
        if let result = trivial(base: base, local: local, remote: remote) {
            return TextMergeResult(outcome: .merged(result), hadConflicts: false)
        }
        let merge = LineMerge(base: base, local: local, remote: remote, budget: budget)
        var output: [UInt8] = []
        output.reserveCapacity(max(local.count, remote.count) + 64)
        var hadConflicts = false
        var lineEnding: [UInt8]?  // computed at the first conflict
        var cursor = 0
        for region in merge.regions {
            output += merge.base.bytes(of: cursor..<region.base.lowerBound)
            cursor = region.base.upperBound
            if let lines = merge.cleanLines(region) {
                output += lines
            } else {
                hadConflicts = true
                guard markers else { return TextMergeResult(outcome: .conflicted, hadConflicts: true) }
                lineEnding = lineEnding ?? merge.dominantLineEnding
                writeConflict(region, of: merge, lineEnding: lineEnding ?? [], to: &output)
            }
        }
        output += merge.base.bytes(of: cursor..<merge.base.count)
        return TextMergeResult(outcome: .merged(output), hadConflicts: hadConflicts)
    }

    private static func writeConflict(
        _ region: MergeRegion, of merge: LineMerge, lineEnding: [UInt8], to output: inout [UInt8]
    ) {
        func section(_ marker: String, _ lines: ArraySlice<UInt8>) {
            output += marker.utf8
            output += lineEnding
            output += lines
            if let last = lines.last, last != 0x0A { output += lineEnding }
        }
        section("<<<<<<< local", merge.local.bytes(of: region.local))
        section("||||||| base", merge.base.bytes(of: region.base))
        section("=======", merge.remote.bytes(of: region.remote))
        output += ">>>>>>> remote".utf8
        output += lineEnding
    }
}
