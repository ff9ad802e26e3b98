/// A path being matched: its UTF-8 bytes ("/"-separated, no empty component) and the end of
/// each component. Depth d (1-based) is the path of its first d components.
struct IgnorePath {
    let bytes: UnsafeBufferPointer<UInt8>
    /// The offset after each component's last byte.
    let ends: UnsafeBufferPointer<Int>
    /// The first and the last bytes of the components, as sets.
    private(set) var firstBytes = ByteSet()
    private(set) var lastBytes = ByteSet()

    init(bytes: UnsafeBufferPointer<UInt8>, ends: UnsafeBufferPointer<Int>) {
        self.bytes = bytes
        self.ends = ends
        var start = 0
        for end in ends {
            firstBytes.insert(bytes[start])
            lastBytes.insert(bytes[end - 1])
            start = end + 1
        }
    }

    var depth: Int { ends.count }

    /// The offset of the first byte of the component at `depth`.
    @inline(__always)
    func start(ofDepth depth: Int) -> Int { depth == 1 ? 0 : ends[depth - 2] + 1 }

    /// The depth whose last byte ends at `end`.
    func depth(endingAt end: Int) -> Int {
        var low = 0
        var high = ends.count - 1
        while low < high {
            let middle = (low + high) / 2
            if ends[middle] < end { low = middle + 1 } else { high = middle }
        }
        return low + 1
    }

    func bytesEqual(_ literal: [UInt8], at offset: Int) -> Bool {
        guard offset + literal.count <= bytes.count else { return false }
        var index = 0
        while index < literal.count {
            guard bytes[offset + index] == literal[index] else { return false }
            index += 1
        }
        return true
    }
}

extension IgnorePattern {
    /// Reports, in increasing order, each depth from `firstDepth` through `lastDepth` whose path
    /// the pattern matches (directory-only patterns included: the caller knows which depths are
    /// folders), relative to the folder of depth `firstDepth - 1`; stops when `report` returns
    /// false. Adds the steps taken to `work`.
    func matchingDepths(
        in path: IgnorePath, from firstDepth: Int, through lastDepth: Int, work: inout Int, report: (Int) -> Bool
    ) {
        guard firstDepth <= lastDepth else { return }
        let start = path.start(ofDepth: firstDepth)
        switch form {
        case .literalName, .starredName, .name:
            for depth in firstDepth...lastDepth {
                let name = path.start(ofDepth: depth)..<path.ends[depth - 1]
                work += 1
                if nameFilter.admits(path.bytes, name) && matchesName(path, name, work: &work) {
                    guard report(depth) else { return }
                }
            }
        case .literalPath(let literal):
            work += 1
            let end = start + literal.count
            guard path.bytesEqual(literal, at: start), end == path.bytes.count || path.bytes[end] == 0x2F else {
                return
            }
            let depth = path.depth(endingAt: end)
            if depth <= lastDepth { _ = report(depth) }
        case .path(let wildcard, let prefix):
            work += 1
            guard path.bytesEqual(prefix, at: start) else { return }
            wildcard.matchingPrefixEnds(path.bytes, start..<path.ends[lastDepth - 1], work: &work) { end in
                report(path.depth(endingAt: end))
            }
        }
    }

    /// Whether a name pattern matches the name at `range` of the path.
    private func matchesName(_ path: IgnorePath, _ range: Range<Int>, work: inout Int) -> Bool {
        work += 1
        switch form {
        case .literalName(let literal):
            return literal.count == range.count && path.bytesEqual(literal, at: range.lowerBound)
        case .starredName(let parts):
            return Self.matchesStarred(parts, path, range, work: &work)
        case .name(let wildcard):
            var matched = false
            wildcard.matchingPrefixEnds(path.bytes, range, work: &work) { end in
                matched = end == range.upperBound
                return !matched
            }
            return matched
        case .literalPath, .path:
            return false
        }
    }

    /// `first*middle*…*last` against a name: the first and last runs at its ends, each middle
    /// run at its leftmost place after the one before (which is enough when stars are the only
    /// wildcards).
    private static func matchesStarred(
        _ parts: [[UInt8]], _ path: IgnorePath, _ range: Range<Int>, work: inout Int
    ) -> Bool {
        let first = parts[0]
        let last = parts[parts.count - 1]
        guard first.count + last.count <= range.count, path.bytesEqual(first, at: range.lowerBound),
            path.bytesEqual(last, at: range.upperBound - last.count)
        else { return false }
        var position = range.lowerBound + first.count
        let end = range.upperBound - last.count
        for part in parts.dropFirst().dropLast() where !part.isEmpty {
            while position + part.count <= end && !path.bytesEqual(part, at: position) {
                position += 1
                work += 1
            }
            guard position + part.count <= end else { return false }
            position += part.count
        }
        return true
    }
}

/// A set of bytes.
struct ByteSet {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    mutating func insert(_ byte: UInt8) {
        let bit = UInt64(1) << (byte & 63)
        switch byte >> 6 {
        case 0: words.0 |= bit
        case 1: words.1 |= bit
        case 2: words.2 |= bit
        default: words.3 |= bit
        }
    }

    @inline(__always)
    func contains(_ byte: UInt8) -> Bool {
        let bit = UInt64(1) << (byte & 63)
        switch byte >> 6 {
        case 0: return words.0 & bit != 0
        case 1: return words.1 & bit != 0
        case 2: return words.2 & bit != 0
        default: return words.3 & bit != 0
        }
    }
}
