/// Three versions of a text split into lines, both sides diffed against the base (`LineDiff`),
/// and the changes grouped into diff3 regions (`Diff3`).
struct LineMerge {
    let base: Lines
    let local: Lines
    let remote: Lines
    let localHunks: [Hunk]
    let remoteHunks: [Hunk]
    let regions: [MergeRegion]

    init(base: [UInt8], local: [UInt8], remote: [UInt8], budget: Int = MyersDiff.defaultBudget) {
        self.base = Lines(base)
        self.local = Lines(local)
        self.remote = Lines(remote)
        let baseHashes = LineHash.hashes(self.base)
        localHunks = LineDiff.diff(self.base, baseHashes, self.local, LineHash.hashes(self.local), budget: budget)
        remoteHunks = LineDiff.diff(self.base, baseHashes, self.remote, LineHash.hashes(self.remote), budget: budget)
        regions = Diff3.regions(
            baseCount: self.base.count, local: localHunks, remote: remoteHunks,
            localOpenEnd: !self.local.endsWithNewline, remoteOpenEnd: !self.remote.endsWithNewline)
    }

    /// The lines a region becomes when it is no conflict: the changed side's lines when one side
    /// changed it, the common lines when both changed it the same way (identical changes count
    /// once); nil when both changed it differently.
    func cleanLines(_ region: MergeRegion) -> ArraySlice<UInt8>? {
        let localLines = local.bytes(of: region.local)
        if !region.remoteChanged { return localLines }
        let remoteLines = remote.bytes(of: region.remote)
        if !region.localChanged || localLines == remoteLines { return remoteLines }
        return nil
    }

    /// The line ending of conflict markers and of lines the merge has to end.
    var dominantLineEnding: [UInt8] { Lines.dominantLineEnding([local, remote, base]) }
}
