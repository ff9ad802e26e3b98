/// The rules file (`.syncfs-rules` at the container's root), gitattributes-style: which
/// `MergeChain` of policies applies to which paths.
///
/// One rule per line: `GLOB POLICY [else POLICY]…`, each policy `merge=…|prefer=…
/// [conflict=markers] [timeout=N]`, glob syntax as in `Glob` (a glob with spaces may be written
/// in double quotes); see `RuleLine` and `RuleStep` for the grammar.
/// `#` comments and blank lines are ignored. A line that does not parse is reported in `problems`
/// and skipped: a bad line never disables the others. Later lines override earlier ones (like
/// gitattributes), and the file's rules come after the built-in defaults.
public struct MergeRules: Equatable, Sendable {
    public static let fileName = ".syncfs-rules"

    /// Built-in defaults only.
    public static let defaults = MergeRules(rules: [], problems: [])

    /// The rules of the file that parsed, in file order.
    public private(set) var rules: [MergeRule]
    /// The lines that did not parse.
    public var problems: [RuleProblem]

    /// The built-in rules, before the file's: `*.json` merges as JSON. (Files no rule matches
    /// merge as text when they are text, else keep both: see `chain(forPath:)`.)
    static let builtIn: [MergeRule] = [MergeRule(glob: try! Glob("*.json"), chain: MergeChain([.json]), line: 0)]

    init(rules: [MergeRule], problems: [RuleProblem]) {
        self.rules = rules
        self.problems = problems
    }

    /// Parses the text of a rules file (lines end in "\n" or "\r\n"; a leading byte order mark
    /// is ignored).
    public init(parsing text: String) {
        var rules: [MergeRule] = []
        var problems: [RuleProblem] = []
        let text = text.first == "\u{FEFF}" ? text.dropFirst() : text[...]
        for (index, rawLine) in text.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }
        ).enumerated() {
            var line = Substring(rawLine)
            if line.last == "\r" { line.removeLast() }
            switch RuleLine.parse(line) {
            case .blank: break
            case .rule(let glob, let chain): rules.append(MergeRule(glob: glob, chain: chain, line: index + 1))
            case .problem(let message): problems.append(RuleProblem(line: index + 1, message: message))
            }
        }
        self.init(rules: rules, problems: problems)
    }

    /// The chain of policies for a file at `path` (relative to the folder root, "/"-separated,
    /// no leading "/").
    ///
    /// The last rule of the file whose glob matches decides; else the built-in rules (`*.json` →
    /// `merge=json`); else `merge=text`. A content policy (`merge=text`, `merge=json`,
    /// `merge=union`) falls through on a file that is not text in some version (a NUL byte or
    /// invalid UTF-8; `MergePolicy.decide`): a line merge of binary data would corrupt it, and the
    /// implied end of every chain keeps both versions.
    public func chain(forPath path: String) -> MergeChain {
        let rule = rules.last { $0.glob.matches(path) } ?? Self.builtIn.last { $0.glob.matches(path) }
        return rule?.chain ?? Self.fallback
    }

    /// The chain of a path no rule matches.
    static let fallback = MergeChain([.text(markers: false)])
}

/// One parsed rule.
public struct MergeRule: Equatable, Sendable {
    let glob: Glob
    /// The glob as written (without quotes).
    public var pattern: String { glob.pattern }
    public var chain: MergeChain
    /// The line of the rules file (1-based; 0 for a built-in rule).
    public var line: Int

    /// Whether the rule's glob matches `path` (see `MergeRules.chain(forPath:)`).
    public func matches(_ path: String) -> Bool { glob.matches(path) }
}

/// A line of the rules file that did not parse.
public struct RuleProblem: Equatable, Sendable, CustomStringConvertible {
    /// 1-based.
    public var line: Int
    public var message: String

    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { "\(MergeRules.fileName):\(line): \(message)" }
}
