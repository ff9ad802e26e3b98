/// The wildcards of one ignore pattern, read as git's wildmatch reads them (with `WM_PATHNAME`),
/// over Unicode scalars.
///
/// - `\` makes the next character literal; a pattern ending in `\` never matches (refused).
/// - `?` is one character, `[...]` one character of a set (`IgnoreCharacterSet`); neither is "/".
/// - `*` is any run of characters without "/".
/// - `**` is any run, "/" included, where it starts the pattern or follows "/" (or, in a pattern
///   matched as a path, follows the pattern's literal start: git's `foo**/bar` matches
///   `foo/x/bar`) and ends it or precedes "/". Followed by "/", the "/" may be skipped as well:
///   `**/x` matches `x`, `a/**/b` matches `a/b`. Elsewhere `**` is `*`.
struct IgnoreWildcard: Sendable {
    enum Token: Equatable, Sendable {
        case scalar(UInt32)
        /// `?`
        case any
        case set(IgnoreCharacterSet)
        /// `*`
        case star
        /// `**`
        case globstar
        /// Matches nothing, or lets the next `count` tokens match nothing (`**/`).
        case optional(count: Int)
    }

    let tokens: [Token]

    /// Reads `pattern`. `literalStart`: the length of its literal start when it is matched as a
    /// path (git matches that part apart, so a `**` right after it counts as starting it).
    init(_ pattern: [Unicode.Scalar], literalStart: Int?) throws(IgnoreCharacterSet.Malformed) {
        var tokens: [Token] = []
        var index = 0
        while index < pattern.count {
            switch pattern[index] {
            case "\\":
                guard index + 1 < pattern.count else {
                    throw IgnoreCharacterSet.Malformed(message: "pattern ends with a backslash")
                }
                tokens.append(.scalar(pattern[index + 1].value))
                index += 2
            case "?":
                tokens.append(.any)
                index += 1
            case "[":
                let (set, end) = try IgnoreCharacterSet.parse(pattern, at: index)
                tokens.append(.set(set))
                index = end
            case "*":
                var end = index
                while end < pattern.count && pattern[end] == "*" { end += 1 }
                let startsComponent = index == 0 || pattern[index - 1] == "/" || index == literalStart
                let followedBySlash = end < pattern.count && pattern[end] == "/"
                let escapedSlash = end + 1 < pattern.count && pattern[end] == "\\" && pattern[end + 1] == "/"
                if end - index >= 2 && startsComponent && (end == pattern.count || followedBySlash || escapedSlash) {
                    if followedBySlash { tokens.append(.optional(count: 2)) }
                    tokens.append(.globstar)
                } else {
                    tokens.append(.star)
                }
                index = end
            case let scalar:
                tokens.append(.scalar(scalar.value))
                index += 1
            }
        }
        self.tokens = tokens
    }

    /// The literal characters at the start of the pattern, as UTF-8.
    var literalPrefix: [UInt8] {
        var scalars = String.UnicodeScalarView()
        for token in tokens {
            guard case .scalar(let value) = token, let scalar = Unicode.Scalar(value) else { break }
            scalars.append(scalar)
        }
        return Array(String(scalars).utf8)
    }

    /// The literal runs between stars, as UTF-8, when the pattern has nothing but literal
    /// characters, `*` and `**` (nil otherwise).
    var starSeparatedLiterals: [[UInt8]]? {
        var parts: [[UInt8]] = [[]]
        for token in tokens {
            switch token {
            case .scalar(let value):
                guard let scalar = Unicode.Scalar(value) else { return nil }
                parts[parts.count - 1].append(contentsOf: String(scalar).utf8)
            case .star, .globstar:
                parts.append([])
            case .optional:
                break
            case .any, .set:
                return nil
            }
        }
        return parts
    }
}
