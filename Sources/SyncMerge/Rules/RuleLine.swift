/// One line of the rules file:
///
/// ```
/// line      = blank | comment | glob chain
/// comment   = optional whitespace, then "#" and anything
/// glob      = a run of characters up to unescaped whitespace ("\ " is a space of the glob)
///           | '"' characters '"'   (inside, \" is a quote; other backslashes are the glob's)
/// chain     = step ( "else" step )*     (at most MergeChain.maximumSteps steps)
/// step      = attributes, as in RuleStep
/// ```
/// `else` is a word of its own (whitespace around it). A chain holds at most one
/// `merge=command:`, and nothing may follow a step that always decides (`prefer=newest`,
/// `prefer=local`, `prefer=remote`, `merge=keep-both`): it would never be used.
enum RuleLine: Equatable {
    case blank
    case rule(Glob, MergeChain)
    case problem(String)

    static func parse(_ line: Substring) -> RuleLine {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        if trimmed.isEmpty || trimmed.first == "#" { return .blank }
        do throws(RuleSyntaxError) {
            var rest = trimmed
            let pattern = try globText(&rest)
            let glob: Glob
            do {
                glob = try Glob(pattern)
            } catch {
                throw RuleSyntaxError("bad glob \"\(pattern)\": \(error.message)")
            }
            return .rule(glob, try chain(rest))
        } catch {
            return .problem(error.message)
        }
    }

    private static func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }

    /// Takes the glob off the front of `rest`.
    private static func globText(_ rest: inout Substring) throws(RuleSyntaxError) -> String {
        var pattern = ""
        if rest.first == "\"" {
            rest.removeFirst()
            while let character = rest.first {
                rest.removeFirst()
                if character == "\"" {
                    guard rest.first.map(isSpace) ?? true else {
                        throw RuleSyntaxError("text right after the closing quote")
                    }
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
            throw RuleSyntaxError("a quoted glob without its closing quote")
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

    /// The chain of the attributes after the glob.
    private static func chain(_ attributes: Substring) throws(RuleSyntaxError) -> MergeChain {
        let texts = try stepTexts(attributes)
        var steps: [MergePolicy] = []
        for (index, text) in texts.enumerated() {
            if let last = steps.last, last.alwaysDecides {
                throw RuleSyntaxError("nothing after \(last) is used (it always decides)")
            }
            do {
                steps.append(try RuleStep.policy(text))
            } catch {
                throw texts.count == 1 ? error : RuleSyntaxError("policy \(index + 1): \(error.message)")
            }
        }
        let commands = steps.filter { if case .command = $0 { true } else { false } }
        guard commands.count <= 1 else { throw RuleSyntaxError("at most one merge=command: in a rule") }
        return MergeChain(steps)
    }

    /// The attributes split at each `else` word. Stops at the first step too many, so a line of
    /// any length costs one pass at most.
    private static func stepTexts(_ attributes: Substring) throws(RuleSyntaxError) -> [Substring] {
        var steps: [Substring] = []
        var stepStart = attributes.startIndex
        var index = attributes.startIndex
        while index < attributes.endIndex {
            guard !isSpace(attributes[index]) else {
                index = attributes.index(after: index)
                continue
            }
            let wordStart = index
            while index < attributes.endIndex, !isSpace(attributes[index]) { index = attributes.index(after: index) }
            guard attributes[wordStart..<index] == "else" else { continue }
            steps.append(attributes[stepStart..<wordStart])
            guard steps.count < MergeChain.maximumSteps else {
                throw RuleSyntaxError(
                    "a rule has at most \(MergeChain.maximumSteps) policies (\(MergeChain.maximumSteps - 1) \"else\")")
            }
            stepStart = index
        }
        steps.append(attributes[stepStart...])
        if steps.count > 1, steps.contains(where: { $0.allSatisfy(isSpace) }) {
            throw RuleSyntaxError("\"else\" needs a policy before and after it")
        }
        return steps
    }
}

/// Why a line of the rules file does not parse.
struct RuleSyntaxError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
