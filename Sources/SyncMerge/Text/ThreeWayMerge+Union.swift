extension ThreeWayMerge {
    /// Lines of both sides, for lists and logs. Never conflicts.
    ///
    /// The regions are those of `text` (see there). A region one side changed takes that side's
    /// lines (so a deletion applies); a region both changed to the same lines takes them once. A
    /// region both changed differently takes local's lines, then the lines remote added there
    /// (the lines of remote's changes, in remote's order) except those local's lines already
    /// have (matched in order by a diff, so a line both sides added appears once). Base lines
    /// local deleted or replaced in such a region stay deleted; remote's replacements stay. When
    /// local's last line there has no "\n" and remote lines follow, the dominant line ending
    /// (see `text`) is put between them.
    public static func union(base: [UInt8], local: [UInt8], remote: [UInt8]) -> [UInt8] {
        if let result = trivial(base: base, local: local, remote: remote) { return result }
        let merge = LineMerge(base: base, local: local, remote: remote)
        var output: [UInt8] = []
        output.reserveCapacity(local.count + remote.count / 8 + 64)
        var lineEnding: [UInt8]?  // computed when first needed
        var cursor = 0
        for region in merge.regions {
            output += merge.base.bytes(of: cursor..<region.base.lowerBound)
            cursor = region.base.upperBound
            if let lines = merge.cleanLines(region) {
                output += lines
            } else {
                output += merge.local.bytes(of: region.local)
                for line in remoteAdditions(region, of: merge) {
                    if let last = output.last, last != 0x0A {
                        lineEnding = lineEnding ?? merge.dominantLineEnding
                        output += lineEnding ?? []
                    }
                    output += merge.remote.bytes(of: line..<line + 1)
                }
            }
        }
        output += merge.base.bytes(of: cursor..<merge.base.count)
        return output
    }

    /// The remote lines added in a region (lines of remote's hunks) that local's lines of the
    /// region do not already have.
    private static func remoteAdditions(_ region: MergeRegion, of merge: LineMerge) -> [Int] {
        let added = merge.remoteHunks[region.remoteHunks].flatMap { Array($0.new) }
        let addedText = Lines(added.flatMap { merge.remote.bytes(of: $0..<$0 + 1) })
        let hunks = LineDiff.diff(Lines(Array(merge.local.bytes(of: region.local))), addedText)
        return hunks.flatMap { $0.new.map { added[$0] } }
    }
}
