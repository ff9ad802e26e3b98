/// One line of the rules file:
///
/// ```
/// line      = blank | comment | glob attribute+
/// comment   = optional whitespace, then "#" and anything
/// glob      = a run of characters up to unescaped whitespace ("\ " is a space of the glob)
///           | '"' characters '"'   (inside, \" is a quote; other backslashes are the glob's)
/// attribute = merge=text | merge=json | merge=union | merge=keep-both
///           | prefer=newest | prefer=local | prefer=remote
///           | conflict=markers      (only with merge=text)
///           | timeout=SECONDS       (only with merge=command; a whole number 1…86400)
///           | merge=command:NAME    (the last attribute: NAME is the rest of the line, trimmed,
///                                    up to a trailing " timeout=SECONDS" if present; a name of
///                                    the machine's MergeCommandTable — anything else parses,
///                                    and its merges keep both)
/// ```
/// Attributes are separated by whitespace; exactly one `merge=` or `prefer=`; none twice.
enum RuleLine: Equatable {
    case blank
    case rule(Glob, MergePolicy)
    case problem(String)

    static let maximumTimeoutSeconds = 86_400

    static func parse(_ line: Substring) -> RuleLine {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        if trimmed.isEmpty || trimmed.first == "#" { return .blank }
        do throws(Problem) {
            var rest = trimmed
            let pattern = try globText(&rest)
            let glob: Glob
            do { glob = try Glob(pattern) } catch { throw Problem("bad glob \"\(pattern)\": \(error.message)") }
            return .rule(glob, try policy(rest))
        } catch {
            return .problem(error.message)
        }
    }

    private struct Problem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    private static func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }

    /// Takes the glob off the front of `rest`.
    private static func globText(_ rest: inout Substring) throws(Problem) -> String {
        var pattern = ""
        if rest.first == "\"" {
            rest.removeFirst()
            while let character = rest.first {
                rest.removeFirst()
                if character == "\"" {
                    guard rest.first.map(isSpace) ?? true else { throw Problem("text right after the closing quote") }
                    return pattern
                }
                if character == "\\", rest.first == "\"" {
                    pattern.append(rest.removeFirst())
                } else {
                    pattern.append(character)
                    if character == "\\", let next = rest.first {
                        pattern.append(next)
                        rest.removeFirst()
                    }
                }
            }
            throw Problem("a quoted glob without its closing quote")
        }
        while let character = rest.first, !isSpace(character) {
            rest.removeFirst()
            pattern.append(character)
            if character == "\\", let next = rest.first {
                pattern.append(next)
                rest.removeFirst()
            }
        }
        return pattern
    }

    private static func policy(_ attributes: Substring) throws(Problem) -> MergePolicy {
        var rest = attributes
        var merge: String?
        var prefer: String?
        var markers = false
        var timeout: Int?
        var command: String?
        func setOnce<T>(_ slot: inout T?, _ value: T, _ name: String) throws(Problem) {
            guard slot == nil else { throw Problem("\(name) given twice") }
            slot = value
        }
        while true {
            rest = rest.drop(while: isSpace)
            if rest.isEmpty { break }
            if rest.hasPrefix("merge=command:") {
                try setOnce(&merge, "command", "merge=")
                var text = rest.dropFirst("merge=command:".count)
                if let (seconds, before) = try trailingTimeout(text) {
                    try setOnce(&timeout, seconds, "timeout=")
                    text = before
                }
                command = String(text.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
                guard command?.isEmpty == false else { throw Problem("merge=command: needs a command") }
                break
            }
            let word = rest.prefix { !isSpace($0) }
            rest = rest.dropFirst(word.count)
            if word.hasPrefix("merge=") {
                let value = String(word.dropFirst("merge=".count))
                guard ["text", "json", "union", "keep-both"].contains(value) else {
                    throw Problem("unknown merge=\(value) (text, json, union, keep-both or command:…)")
                }
                try setOnce(&merge, value, "merge=")
            } else if word.hasPrefix("prefer=") {
                let value = String(word.dropFirst("prefer=".count))
                guard ["newest", "local", "remote"].contains(value) else {
                    throw Problem("unknown prefer=\(value) (newest, local or remote)")
                }
                try setOnce(&prefer, value, "prefer=")
            } else if word == "conflict=markers" {
                guard !markers else { throw Problem("conflict= given twice") }
                markers = true
            } else if word.hasPrefix("timeout=") {
                try setOnce(&timeout, try seconds(word.dropFirst("timeout=".count)), "timeout=")
            } else {
                throw Problem("unknown attribute \"\(word)\"")
            }
        }
        if merge != nil && prefer != nil { throw Problem("both merge= and prefer=") }
        if markers && merge != "text" { throw Problem("conflict=markers needs merge=text") }
        if timeout != nil && merge != "command" { throw Problem("timeout= needs merge=command:…") }
        switch (merge, prefer) {
        case ("text", _): return .text(markers: markers)
        case ("json", _): return .json
        case ("union", _): return .union
        case ("keep-both", _): return .keepBoth
        case ("command", _):
            return .command(command ?? "", timeoutSeconds: timeout)
        case (_, "newest"): return .newest
        case (_, "local"): return .local
        case (_, "remote"): return .remote
        default: throw Problem("needs merge=… or prefer=…")
        }
    }

    /// A trailing " timeout=N" of a command: the seconds and the command before it.
    private static func trailingTimeout(_ text: Substring) throws(Problem) -> (Int, Substring)? {
        let trimmed = text.reversed().drop(while: isSpace)
        let lastWord = String(trimmed.prefix { !isSpace($0) }.reversed())
        guard lastWord.hasPrefix("timeout="), trimmed.count > lastWord.count else { return nil }
        let before = text.prefix(trimmed.count - lastWord.count)
        guard before.last.map(isSpace) == true else { return nil }
        return (try seconds(lastWord.dropFirst("timeout=".count)), before)
    }

    private static func seconds(_ text: Substring) throws(Problem) -> Int {
        guard let value = Int(text), value >= 1, value <= maximumTimeoutSeconds else {
            throw Problem("timeout=\(text) is not a whole number of seconds from 1 to \(maximumTimeoutSeconds)")
        }
        return value
    }
}
