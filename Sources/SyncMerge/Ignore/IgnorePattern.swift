/// One pattern line of an ignore file, ready to match, as git reads it: a leading `!` negates,
/// a trailing "/" matches folders only; a pattern with no other "/" matches the name of a file
/// or folder at any depth below the file's folder, else the path relative to that folder (one
/// leading "/" only anchors).
struct IgnorePattern: Sendable {
    enum Form: Sendable {
        /// A name with no wildcard.
        case literalName([UInt8])
        /// A name of literal runs separated by stars (at least two runs).
        case starredName([[UInt8]])
        case name(IgnoreWildcard)
        /// A relative path with no wildcard.
        case literalPath([UInt8])
        /// A relative path with wildcards, and its literal start.
        case path(IgnoreWildcard, prefix: [UInt8])
    }

    let negated: Bool
    let directoryOnly: Bool
    let form: Form
    /// For a name pattern, what every name it matches has (checked before the pattern itself).
    let nameFilter: NameFilter

    /// Reads a line already stripped of its line end and of unescaped trailing spaces; nil when
    /// the pattern is empty.
    init?(_ line: Substring) throws(IgnoreCharacterSet.Malformed) {
        var pattern = Array(line.unicodeScalars)
        negated = pattern.first == "!"
        if negated { pattern.removeFirst() }
        directoryOnly = pattern.last == "/"
        if directoryOnly { pattern.removeLast() }
        guard !pattern.isEmpty else { return nil }
        if !pattern.contains("/") {
            let wildcard = try IgnoreWildcard(pattern, literalStart: nil)
            if let parts = wildcard.starSeparatedLiterals {
                form = parts.count == 1 ? .literalName(parts[0]) : .starredName(parts)
                nameFilter = NameFilter(parts)
            } else {
                form = .name(wildcard)
                nameFilter = NameFilter()
            }
        } else {
            if pattern.first == "/" { pattern.removeFirst() }
            guard !pattern.isEmpty else { return nil }
            let literalStart = pattern.firstIndex { "*?[\\".unicodeScalars.contains($0) }
            let wildcard = try IgnoreWildcard(pattern, literalStart: literalStart ?? pattern.count)
            nameFilter = NameFilter(isName: false)
            if literalStart == nil {
                form = .literalPath(Array(String(String.UnicodeScalarView(pattern)).utf8))
            } else {
                form = .path(wildcard, prefix: wildcard.literalPrefix)
            }
        }
    }
}

/// A quick test of a name against a name pattern: its least length, first and last byte.
struct NameFilter: Sendable {
    /// False for a path pattern (which the filter does not test).
    var isName = true
    var minimumLength = 0
    /// 256: any.
    var first: UInt16 = 256
    var last: UInt16 = 256

    init(isName: Bool = true) { self.isName = isName }

    /// For literal runs separated by stars (one run: a literal name).
    init(_ parts: [[UInt8]]) {
        minimumLength = parts.reduce(0) { $0 + $1.count }
        if let byte = parts[0].first { first = UInt16(byte) }
        if let byte = parts[parts.count - 1].last { last = UInt16(byte) }
    }

    /// Whether some name of `path` from `firstDepth` through `lastDepth` passes (always true
    /// for a path pattern).
    func admitsSome(_ path: IgnorePath, from firstDepth: Int, through lastDepth: Int) -> Bool {
        guard isName, firstDepth <= lastDepth else { return true }
        // Most names of most paths fail at once: no name of the path has such a first or last byte.
        if first != 256 && !path.firstBytes.contains(UInt8(first)) { return false }
        if last != 256 && !path.lastBytes.contains(UInt8(last)) { return false }
        for depth in firstDepth...lastDepth where admits(path.bytes, path.start(ofDepth: depth)..<path.ends[depth - 1])
        {
            return true
        }
        return false
    }

    @inline(__always)
    func admits(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        range.count >= minimumLength && (first == 256 || UInt16(bytes[range.lowerBound]) == first)
            && (last == 256 || UInt16(bytes[range.upperBound - 1]) == last)
    }
}
