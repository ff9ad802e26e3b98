/// A gitattributes-style path pattern, matched against a path relative to the folder root
/// ("/"-separated, no leading "/"). Case-sensitive; characters are Unicode scalars.
///
/// - A pattern without "/" (other than a trailing one) matches the last path component, at any
///   depth: `*.txt` matches `a.txt` and `notes/b.txt`.
/// - A pattern with a "/" elsewhere is anchored at the root; a leading "/" is allowed and changes
///   nothing else: `docs/*.md` and `/docs/*.md` match `docs/a.md`, not `x/docs/a.md`.
/// - A trailing "/" makes a directory pattern: it matches every file below a matching directory
///   (`build/` matches `build/a` and `src/build/x/y`; `/build/` only the top one). A file named
///   like that directory is not matched.
/// - `*` matches any run of characters except "/" (also none), `?` one character except "/".
/// - `[abc]`, `[a-z]`, `[!x]` (or `[^x]`) match one character of (or not of) a class; a class
///   never matches "/"; `]` right after `[` or `[!` is a member; `\` escapes inside a class too.
/// - `**/` matches any number of directories, none included (`**/x`, `a/**/b`); a trailing
///   `/**` matches everything below (`a/**` matches `a/b` and `a/b/c`, not `a`). Other runs of
///   stars count as one `*`.
/// - `\` makes the next character literal (`\*`, `\?`, `\[`, `\\`, `\ `).
struct Glob: Equatable, Sendable {
    /// The pattern as written.
    let pattern: String
    private let tokens: [Token]

    enum Token: Equatable, Sendable {
        case literal(Unicode.Scalar)
        /// `?`
        case any
        /// `*`
        case star
        /// `[…]`
        case characterClass(CharacterClass)
        /// `**/`: zero or more directories.
        case directories
        /// A trailing `/**`: "/" and at least one more character.
        case everythingBelow
    }

    struct CharacterClass: Equatable, Sendable {
        var negated: Bool
        var ranges: [ClosedRange<UInt32>]

        func matches(_ scalar: Unicode.Scalar) -> Bool {
            ranges.contains { $0.contains(scalar.value) } != negated
        }
    }

    struct SyntaxError: Error, Equatable {
        var message: String
    }

    init(_ pattern: String) throws(SyntaxError) {
        self.pattern = pattern
        var scalars = Array(pattern.unicodeScalars)
        var directoryOnly = false
        if scalars.last == "/" && !Self.isEscaped(scalars, scalars.count - 1) {
            directoryOnly = true
            scalars.removeLast()
        }
        guard !scalars.isEmpty else { throw SyntaxError(message: "empty pattern") }
        var tokens = try Self.tokenize(scalars)
        let anchored = tokens.contains { token in
            token == .literal("/") || token == .directories || token == .everythingBelow
        }
        if anchored {
            if tokens.first == .literal("/") { tokens.removeFirst() }
        } else {
            tokens.insert(.directories, at: 0)
        }
        if directoryOnly { tokens.append(.everythingBelow) }
        self.tokens = tokens
    }

    private static func isEscaped(_ scalars: [Unicode.Scalar], _ index: Int) -> Bool {
        var backslashes = 0
        var position = index - 1
        while position >= 0 && scalars[position] == "\\" {
            backslashes += 1
            position -= 1
        }
        return backslashes % 2 == 1
    }

    private static func tokenize(_ scalars: [Unicode.Scalar]) throws(SyntaxError) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case "\\":
                guard index + 1 < scalars.count else { throw SyntaxError(message: "pattern ends with a backslash") }
                tokens.append(.literal(scalars[index + 1]))
                index += 2
            case "?":
                tokens.append(.any)
                index += 1
            case "[":
                let (characterClass, end) = try parseClass(scalars, from: index)
                tokens.append(.characterClass(characterClass))
                index = end
            case "*":
                var end = index
                while end < scalars.count && scalars[end] == "*" { end += 1 }
                let run = end - index
                let atComponentStart = index == 0 || tokens.last == .literal("/")
                if run >= 2 && atComponentStart && end < scalars.count && scalars[end] == "/" {
                    tokens.append(.directories)
                    end += 1
                } else if run >= 2 && index > 0 && tokens.last == .literal("/") && end == scalars.count {
                    tokens[tokens.count - 1] = .everythingBelow
                } else if tokens.last != .star {
                    tokens.append(.star)
                }
                index = end
            default:
                tokens.append(.literal(scalar))
                index += 1
            }
        }
        return tokens
    }

    /// A class starting at `start` (its "["), and the index after its "]".
    private static func parseClass(_ scalars: [Unicode.Scalar], from start: Int) throws(SyntaxError) -> (
        CharacterClass, Int
    ) {
        var index = start + 1
        var negated = false
        if index < scalars.count && (scalars[index] == "!" || scalars[index] == "^") {
            negated = true
            index += 1
        }
        var ranges: [ClosedRange<UInt32>] = []
        var first = true
        while index < scalars.count {
            var scalar = scalars[index]
            if scalar == "]" && !first { return (CharacterClass(negated: negated, ranges: ranges), index + 1) }
            first = false
            if scalar == "\\" {
                guard index + 1 < scalars.count else { break }
                index += 1
                scalar = scalars[index]
            }
            index += 1
            var upper = scalar
            if index + 1 < scalars.count && scalars[index] == "-" && scalars[index + 1] != "]" {
                upper = scalars[index + 1]
                index += 2
                if upper == "\\" {
                    guard index < scalars.count else { break }
                    upper = scalars[index]
                    index += 1
                }
                guard scalar.value <= upper.value else {
                    throw SyntaxError(message: "character range \(scalar)-\(upper) is reversed")
                }
            }
            ranges.append(scalar.value...upper.value)
        }
        throw SyntaxError(message: "\"[\" without a closing \"]\"")
    }

    /// Whether the pattern matches `path` (a leading "/" is ignored).
    func matches(_ path: String) -> Bool {
        var scalars = Array(path.unicodeScalars)
        if scalars.first == "/" { scalars.removeFirst() }
        var matcher = Matcher(tokens: tokens, path: scalars)
        return matcher.matches(token: 0, at: 0)
    }
}

/// Backtracking over tokens and path positions, each pair decided once.
private struct Matcher {
    let tokens: [Glob.Token]
    let path: [Unicode.Scalar]
    /// 0 unknown, 1 match, 2 no match; indexed by token × (path.count + 1) + position.
    var memo: [UInt8]

    init(tokens: [Glob.Token], path: [Unicode.Scalar]) {
        self.tokens = tokens
        self.path = path
        memo = [UInt8](repeating: 0, count: (tokens.count + 1) * (path.count + 1))
    }

    mutating func matches(token: Int, at position: Int) -> Bool {
        let key = token * (path.count + 1) + position
        if memo[key] != 0 { return memo[key] == 1 }
        let result = compute(token: token, at: position)
        memo[key] = result ? 1 : 2
        return result
    }

    private mutating func compute(token: Int, at position: Int) -> Bool {
        guard token < tokens.count else { return position == path.count }
        let atEnd = position == path.count
        switch tokens[token] {
        case .literal(let scalar):
            return !atEnd && path[position] == scalar && matches(token: token + 1, at: position + 1)
        case .any:
            return !atEnd && path[position] != "/" && matches(token: token + 1, at: position + 1)
        case .characterClass(let characterClass):
            return !atEnd && path[position] != "/" && characterClass.matches(path[position])
                && matches(token: token + 1, at: position + 1)
        case .star:
            if matches(token: token + 1, at: position) { return true }
            return !atEnd && path[position] != "/" && matches(token: token, at: position + 1)
        case .directories:
            if matches(token: token + 1, at: position) { return true }
            var next = position
            while next < path.count {
                if path[next] == "/" && matches(token: token + 1, at: next + 1) { return true }
                next += 1
            }
            return false
        case .everythingBelow:
            guard !atEnd && path[position] == "/" && position + 1 < path.count else { return false }
            return (position + 2...path.count).contains { matches(token: token + 1, at: $0) }
        }
    }
}
