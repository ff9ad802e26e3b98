/// The decision for one path, built from its files in order of precedence: each depth of the
/// path (its folders, then itself) is decided by the first line offered that matches it; the
/// answer is the match of the shallowest folder decided as ignored, else the path's own.
struct IgnoreDecision {
    let path: IgnorePath
    let isDirectory: Bool
    /// By depth (index 0 unused).
    let decided: UnsafeMutableBufferPointer<Bool>
    /// The deepest depth that can still change the answer.
    private var lastRelevant: Int
    private var undecidedRelevant: Int
    private var ignoredFolder: IgnoreMatch?
    private var own: IgnoreMatch?

    init(path: IgnorePath, isDirectory: Bool, decided: UnsafeMutableBufferPointer<Bool>) {
        self.path = path
        self.isDirectory = isDirectory
        self.decided = decided
        lastRelevant = path.depth
        undecidedRelevant = path.depth
    }

    var isComplete: Bool { undecidedRelevant == 0 }

    var result: IgnoreMatch? { ignoredFolder ?? own }

    /// Offers the lines of `file`, which sits in the folder of `folderDepth`, last line first.
    mutating func offer(_ file: IgnoreFile, source: IgnoreSource, folderDepth: Int, work: inout Int) {
        let lines = file.lines
        let filters = file.nameFilters
        var index = lines.count - 1
        while index >= 0 && undecidedRelevant > 0 && folderDepth < lastRelevant {
            defer { index -= 1 }
            work += 1 + lastRelevant - folderDepth
            guard filters[index].admitsSome(path, from: folderDepth + 1, through: lastRelevant) else { continue }
            lines[index].pattern.matchingDepths(in: path, from: folderDepth + 1, through: lastRelevant, work: &work) {
                depth in
                claim(depth, line: lines[index], source: source)
            }
        }
    }

    /// Lets `line` decide `depth` unless decided already; false when the line need not report
    /// deeper depths.
    private mutating func claim(_ depth: Int, line: IgnoreFile.Line, source: IgnoreSource) -> Bool {
        guard depth <= lastRelevant else { return false }
        guard !decided[depth] else { return true }
        let isFolder = depth < path.depth || isDirectory
        guard isFolder || !line.pattern.directoryOnly else { return true }
        decided[depth] = true
        undecidedRelevant -= 1
        let match = IgnoreMatch(ignored: !line.pattern.negated, source: source, line: line.number, pattern: line.text)
        guard depth < path.depth else {
            own = match
            return true
        }
        guard match.ignored else { return true }
        ignoredFolder = match
        for deeper in (depth + 1)..<(lastRelevant + 1) where !decided[deeper] { undecidedRelevant -= 1 }
        lastRelevant = depth - 1
        return false
    }
}
