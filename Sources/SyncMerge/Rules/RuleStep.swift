/// One policy of a rule's chain (`RuleLine`), the text between the glob, the `else` words and
/// the end of the line:
///
/// ```
/// step      = attribute+            (separated by whitespace)
/// attribute = merge=text | merge=json | merge=union | merge=keep-both | keep-both
///           | prefer=newest | prefer=local | prefer=remote
///           | prefer=larger | prefer=smaller
///           | prefer=max(json:POINTER) | prefer=min(json:POINTER)
///                                   (POINTER: an RFC 6901 JSON Pointer without whitespace,
///                                    e.g. /score or /players/0/level; see JSONPointer)
///           | conflict=markers      (only with merge=text)
///           | timeout=SECONDS       (only with merge=command; a whole number 1…86400)
///           | merge=command:NAME    (the step's last attribute: NAME is the rest of the step,
///                                    trimmed, up to a trailing " timeout=SECONDS" if present;
///                                    a name of the machine's MergeCommandTable — anything
///                                    else parses, and its merges fall through)
/// ```
/// Exactly one `merge=`, `keep-both` or `prefer=` per step; no attribute twice.
enum RuleStep {
    static let maximumTimeoutSeconds = 86_400

    private static func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }

    static func policy(_ attributes: Substring) throws(RuleSyntaxError) -> MergePolicy {
        var rest = attributes
        var merge: String?
        var prefer: MergePolicy?
        var markers = false
        var timeout: Int?
        var command: String?
        func setOnce<T>(_ slot: inout T?, _ value: T, _ name: String) throws(RuleSyntaxError) {
            guard slot == nil else { throw RuleSyntaxError("\(name) given twice") }
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
                guard command?.isEmpty == false else { throw RuleSyntaxError("merge=command: needs a command") }
                break
            }
            let word = rest.prefix { !isSpace($0) }
            rest = rest.dropFirst(word.count)
            if word.hasPrefix("merge=") || word == "keep-both" {
                let value = word == "keep-both" ? "keep-both" : String(word.dropFirst("merge=".count))
                guard ["text", "json", "union", "keep-both"].contains(value) else {
                    throw RuleSyntaxError("unknown merge=\(value) (text, json, union, keep-both or command:…)")
                }
                try setOnce(&merge, value, "merge=")
            } else if word.hasPrefix("prefer=") {
                try setOnce(&prefer, try preference(word.dropFirst("prefer=".count)), "prefer=")
            } else if word == "conflict=markers" {
                guard !markers else { throw RuleSyntaxError("conflict= given twice") }
                markers = true
            } else if word.hasPrefix("timeout=") {
                try setOnce(&timeout, try seconds(word.dropFirst("timeout=".count)), "timeout=")
            } else {
                throw RuleSyntaxError("unknown attribute \"\(shown(word))\"")
            }
        }
        if merge != nil && prefer != nil { throw RuleSyntaxError("both merge= and prefer=") }
        if markers && merge != "text" { throw RuleSyntaxError("conflict=markers needs merge=text") }
        if timeout != nil && merge != "command" { throw RuleSyntaxError("timeout= needs merge=command:…") }
        switch merge {
        case "text": return .text(markers: markers)
        case "json": return .json
        case "union": return .union
        case "keep-both": return .keepBoth
        case "command": return .command(command ?? "", timeoutSeconds: timeout)
        default:
            guard let prefer else { throw RuleSyntaxError("needs merge=… or prefer=…") }
            return prefer
        }
    }

    /// The policy of `prefer=VALUE`.
    private static func preference(_ value: Substring) throws(RuleSyntaxError) -> MergePolicy {
        switch value {
        case "newest": return .newest
        case "local": return .local
        case "remote": return .remote
        case "larger": return .larger
        case "smaller": return .smaller
        default: break
        }
        let function = value.prefix { $0 != "(" }
        guard function == "max" || function == "min", value.count > function.count else {
            throw RuleSyntaxError(
                "unknown prefer=\(shown(value)) (newest, local, remote, larger, smaller, max(json:POINTER) or min(json:POINTER))"
            )
        }
        guard value.last == ")" else {
            throw RuleSyntaxError("prefer=\(function)( without its closing \")\" (a JSON Pointer here holds no space)")
        }
        let argument = value.dropFirst(function.count + 1).dropLast()
        guard argument.hasPrefix("json:") else {
            throw RuleSyntaxError("prefer=\(function)(…) takes json:POINTER, as in prefer=\(function)(json:/score)")
        }
        let pointer: JSONPointer
        do {
            pointer = try JSONPointer(argument.dropFirst("json:".count))
        } catch {
            throw RuleSyntaxError("bad JSON Pointer \"\(shown(argument.dropFirst("json:".count)))\": \(error.message)")
        }
        return function == "max" ? .maximum(pointer) : .minimum(pointer)
    }

    /// A trailing " timeout=N" of a command: the seconds and the command before it.
    private static func trailingTimeout(_ text: Substring) throws(RuleSyntaxError) -> (Int, Substring)? {
        let trimmed = text.reversed().drop(while: isSpace)
        let lastWord = String(trimmed.prefix { !isSpace($0) }.reversed())
        guard lastWord.hasPrefix("timeout="), trimmed.count > lastWord.count else { return nil }
        let before = text.prefix(trimmed.count - lastWord.count)
        guard before.last.map(isSpace) == true else { return nil }
        return (try seconds(lastWord.dropFirst("timeout=".count)), before)
    }

    private static func seconds(_ text: Substring) throws(RuleSyntaxError) -> Int {
        guard let value = Int(text), value >= 1, value <= maximumTimeoutSeconds else {
            throw RuleSyntaxError(
                "timeout=\(shown(text)) is not a whole number of seconds from 1 to \(maximumTimeoutSeconds)")
        }
        return value
    }

    /// Text of the line, for a message: at most 80 characters.
    private static func shown(_ text: Substring) -> String {
        text.count > 80 ? text.prefix(79) + "…" : String(text)
    }
}
