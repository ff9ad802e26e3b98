/// A bracket expression of an ignore pattern (`[a-z]`, `[!._]`, `[[:digit:]x]`), read as git's
/// wildmatch reads it, with members that are Unicode scalars (git compares bytes).
///
/// - `!` or `^` right after `[` negates; `]` as the first member (after any negation) is a member.
/// - `\` makes the next character a member. `a-z` is a range when a character precedes `-`
///   (not a range or class) and `]` does not follow it; the start also counts on its own, so a
///   reversed `z-a` holds just `z`.
/// - `[:alnum:]`, `[:alpha:]`, `[:blank:]`, `[:cntrl:]`, `[:digit:]`, `[:graph:]`, `[:lower:]`,
///   `[:print:]`, `[:punct:]`, `[:space:]`, `[:upper:]`, `[:xdigit:]` hold ASCII characters only;
///   `[:` without a closing `:]` before the next `]` is a plain `[`.
/// - A set never matches "/".
struct IgnoreCharacterSet: Equatable, Sendable {
    enum Named: String, CaseIterable, Sendable {
        case alnum, alpha, blank, cntrl, digit, graph, lower, print, punct, space, upper, xdigit

        func contains(_ value: UInt32) -> Bool {
            guard value < 0x80 else { return false }
            let isDigit = (0x30...0x39).contains(value)
            let isUpper = (0x41...0x5A).contains(value)
            let isLower = (0x61...0x7A).contains(value)
            let isGraph = (0x21...0x7E).contains(value)
            switch self {
            case .alnum: return isDigit || isUpper || isLower
            case .alpha: return isUpper || isLower
            case .blank: return value == 0x20 || value == 0x09
            case .cntrl: return value < 0x20 || value == 0x7F
            case .digit: return isDigit
            case .graph: return isGraph
            case .lower: return isLower
            case .print: return isGraph || value == 0x20
            case .punct: return isGraph && !isDigit && !isUpper && !isLower
            case .space: return value == 0x20 || (0x09...0x0D).contains(value)
            case .upper: return isUpper
            case .xdigit: return isDigit || (0x41...0x46).contains(value) || (0x61...0x66).contains(value)
            }
        }
    }

    var negated = false
    var ranges: [ClosedRange<UInt32>] = []
    var named: [Named] = []

    func contains(_ value: UInt32) -> Bool {
        guard value != 0x2F else { return false }
        let member = ranges.contains { $0.contains(value) } || named.contains { $0.contains(value) }
        return member != negated
    }

    /// Why a bracket expression cannot be used (git's wildmatch then never matches the pattern).
    struct Malformed: Error, Equatable {
        var message: String
    }

    /// The set whose "[" is at `start`, and the index after its closing "]".
    static func parse(_ pattern: [Unicode.Scalar], at start: Int) throws(Malformed) -> (Self, Int) {
        let unclosed = Malformed(message: "\"[\" without a closing \"]\"")
        var set = IgnoreCharacterSet()
        var index = start + 1
        guard index < pattern.count else { throw unclosed }
        if pattern[index] == "!" || pattern[index] == "^" {
            set.negated = true
            index += 1
        }
        /// The last single member, which may start a range; nil after a range or a named class.
        var previous: UInt32?
        while true {
            guard index < pattern.count else { throw unclosed }
            let scalar = pattern[index]
            var current: UInt32? = scalar.value
            if scalar == "\\" {
                index += 1
                guard index < pattern.count else { throw unclosed }
                current = pattern[index].value
                set.ranges.append(current!...current!)
            } else if scalar == "-", let low = previous, index + 1 < pattern.count, pattern[index + 1] != "]" {
                index += 1
                if pattern[index] == "\\" {
                    index += 1
                    guard index < pattern.count else { throw unclosed }
                }
                let high = pattern[index].value
                if low <= high { set.ranges.append(low...high) }
                current = nil
            } else if scalar == "[", index + 1 < pattern.count, pattern[index + 1] == ":" {
                let nameStart = index + 2
                var end = nameStart
                while end < pattern.count && pattern[end] != "]" { end += 1 }
                guard end < pattern.count else { throw unclosed }
                if end - nameStart >= 1 && pattern[end - 1] == ":" {
                    let name = String(String.UnicodeScalarView(pattern[nameStart..<(end - 1)]))
                    guard let named = Named(rawValue: name) else {
                        throw Malformed(message: "unknown character class [:\(name):]")
                    }
                    set.named.append(named)
                    current = nil
                    index = end
                } else {
                    set.ranges.append(0x5B...0x5B)
                }
            } else {
                set.ranges.append(scalar.value...scalar.value)
            }
            previous = current
            index += 1
            guard index < pattern.count else { throw unclosed }
            if pattern[index] == "]" { return (set, index + 1) }
        }
    }
}
