/// Matching an `IgnoreWildcard` by simulating its automaton: one pass over the text, keeping the
/// set of pattern positions reached so far. Each character costs at most one visit per token, so
/// a match takes at most (tokens + 1) × (characters + 1) steps and memory for a few integers per
/// token; there is no backtracking and no recursion.
extension IgnoreWildcard {
    /// Reports, in increasing order, each end of a prefix of `text[range]` that the pattern
    /// matches, where the prefix ends at a "/" of the text or at the range's end; stops early when
    /// `accepted` returns false or no prefix can match any more. `text` is valid UTF-8. Adds the
    /// steps taken to `work`.
    func matchingPrefixEnds(
        _ text: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, work: inout Int, accepted: (Int) -> Bool
    ) {
        let count = tokens.count
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: 5 * (count + 1) + 2) { buffer in
            // marks: the generation in which a position was last added; then two position lists
            // and a stack of positions to add (each position pushes at most two others).
            let marks = UnsafeMutableBufferPointer(rebasing: buffer[0...count])
            var current = UnsafeMutableBufferPointer(rebasing: buffer[(count + 1)...(2 * count + 1)])
            var next = UnsafeMutableBufferPointer(rebasing: buffer[(2 * count + 2)...(3 * count + 2)])
            let stack = UnsafeMutableBufferPointer(rebasing: buffer[(3 * count + 3)...])
            marks.initialize(repeating: -1)
            var generation: Int32 = 0
            var currentCount = add(0, to: next, count: 0, marks: marks, generation: generation, stack: stack)
            swap(&current, &next)
            var position = range.lowerBound
            while true {
                work += currentCount + 1
                let atBoundary = position == range.upperBound || text[position] == 0x2F
                if atBoundary && position > range.lowerBound && marks[count] == generation {
                    guard accepted(position) else { return }
                }
                guard position < range.upperBound, currentCount > 0 else { return }
                let (value, length) = Self.decode(text, at: position)
                generation += 1
                var nextCount = 0
                for index in 0..<currentCount {
                    let state = Int(current[index])
                    guard state < count else { continue }
                    let target: Int
                    switch tokens[state] {
                    case .scalar(let literal): target = literal == value ? state + 1 : -1
                    case .any: target = value != 0x2F ? state + 1 : -1
                    case .set(let set): target = set.contains(value) ? state + 1 : -1
                    case .star: target = value != 0x2F ? state : -1
                    case .globstar: target = state
                    case .optional: target = -1
                    }
                    if target >= 0 {
                        nextCount = add(
                            target, to: next, count: nextCount, marks: marks, generation: generation, stack: stack)
                    }
                }
                swap(&current, &next)
                currentCount = nextCount
                position += length
            }
        }
    }

    /// Adds `state` and the positions reachable from it without reading a character (past a
    /// `*`, a `**`, or a skippable `**/`) to `list`, which holds `count` positions; returns its new count.
    private func add(
        _ state: Int, to list: UnsafeMutableBufferPointer<Int32>, count: Int,
        marks: UnsafeMutableBufferPointer<Int32>, generation: Int32, stack: UnsafeMutableBufferPointer<Int32>
    ) -> Int {
        var count = count
        var depth = 1
        stack[0] = Int32(state)
        while depth > 0 {
            depth -= 1
            let position = Int(stack[depth])
            guard marks[position] != generation else { continue }
            marks[position] = generation
            list[count] = Int32(position)
            count += 1
            guard position < tokens.count else { continue }
            switch tokens[position] {
            case .star, .globstar:
                stack[depth] = Int32(position + 1)
                depth += 1
            case .optional(let count):
                stack[depth] = Int32(position + 1)
                stack[depth + 1] = Int32(position + 1 + count)
                depth += 2
            case .scalar, .any, .set:
                break
            }
        }
        return count
    }

    /// The scalar at `position` of valid UTF-8 and its length in bytes.
    @inline(__always)
    static func decode(_ text: UnsafeBufferPointer<UInt8>, at position: Int) -> (UInt32, Int) {
        let lead = UInt32(text[position])
        if lead < 0x80 { return (lead, 1) }
        let length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
        var value = lead & (0xFF >> (length + 1))
        for offset in 1..<length where position + offset < text.count {
            value = value << 6 | UInt32(text[position + offset] & 0x3F)
        }
        return (value, length)
    }
}
