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

    /// Whether both sides made the same lines of a region (identical changes count once).
    func sidesAgree(_ region: MergeRegion) -> Bool {
        local.bytes(of: region.local) == remote.bytes(of: region.remote)
    }

    /// The line ending of conflict markers and of lines the merge has to end.
    var dominantLineEnding: [UInt8] { Lines.dominantLineEnding([local, remote, base]) }
}
