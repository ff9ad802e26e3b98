/// The merge commands this machine allows: the parsed text of its local, unsynced
/// `merge-commands` file (doc/SEMANTICS.md, "Merge commands are the machine owner's choice").
///
/// A synced rule only *names* a command (`merge=command:NAME`); this table, written by the
/// machine's owner, *defines* it. One definition per line:
///
/// ```
/// # NAME          [timeout=SECONDS]  COMMAND LINE (placeholders %O %A %B %P %%)
/// sqlite-merge    timeout=60         sqlite-merge %O %A %B
/// ```
///
/// NAME is 1–64 characters of `A-Z a-z 0-9 . _ -`, not starting with `.` or `-`; the command line
/// is the rest of the line, trimmed (not empty). `#` comments and blank lines are ignored; a line
/// that does not parse is reported in `problems` and skipped; a name defined twice keeps its
/// last definition (also reported).
public struct MergeCommandTable: Equatable, Sendable {
    /// One allowed command.
    public struct Definition: Equatable, Sendable {
        public var name: String
        /// The command-line template (`MergeCommand.commandLine`).
        public var template: String
        /// `timeout=` of the definition; nil: `MergePolicy.defaultCommandTimeoutSeconds`.
        public var timeoutSeconds: Int?

        public init(name: String, template: String, timeoutSeconds: Int? = nil) {
            self.name = name
            self.template = template
            self.timeoutSeconds = timeoutSeconds
        }

        /// The timeout a merge uses: the definition's (default 30 s); a rule's `timeout=` can only
        /// shorten it, never lengthen it (the synced file cannot hold the upload thread longer
        /// than the machine's owner allowed).
        public func effectiveTimeout(rule: Int?) -> Int {
            let limit = timeoutSeconds ?? MergePolicy.defaultCommandTimeoutSeconds
            return min(rule ?? limit, limit)
        }
    }

    /// No command allowed.
    public static let empty = MergeCommandTable(definitions: [:], problems: [])

    public private(set) var definitions: [String: Definition]
    public private(set) var problems: [RuleProblem]

    init(definitions: [String: Definition], problems: [RuleProblem]) {
        self.definitions = definitions
        self.problems = problems
    }

    /// Whether `name` can name a merge command (in a rule or in this table).
    public static func isValidName(_ name: Substring) -> Bool {
        guard (1...64).contains(name.utf8.count), let first = name.utf8.first, first != UInt8(ascii: "."),
            first != UInt8(ascii: "-")
        else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// Parses the text of a `merge-commands` file (lines end in "\n" or "\r\n").
    public init(parsing text: String) {
        var definitions: [String: Definition] = [:]
        var problems: [RuleProblem] = []
        func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }
        for (index, rawLine) in text.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }
        ).enumerated() {
            var line = Substring(rawLine)
            if line.last == "\r" { line.removeLast() }
            line = line.drop(while: isSpace)
            if line.isEmpty || line.first == "#" { continue }
            func problem(_ message: String) { problems.append(RuleProblem(line: index + 1, message: message)) }
            let name = line.prefix { !isSpace($0) }
            guard Self.isValidName(name) else {
                problem("\"\(name.prefix(80))\" is not a command name (1–64 of A-Z a-z 0-9 . _ -, not first . or -)")
                continue
            }
            var rest = line.dropFirst(name.count).drop(while: isSpace)
            var timeout: Int?
            let word = rest.prefix { !isSpace($0) }
            if word.hasPrefix("timeout=") {
                guard let seconds = Int(word.dropFirst("timeout=".count)), (1...86_400).contains(seconds) else {
                    problem("\(word) is not a whole number of seconds from 1 to 86400")
                    continue
                }
                timeout = seconds
                rest = rest.dropFirst(word.count).drop(while: isSpace)
            }
            let template = String(rest.reversed().drop(while: isSpace).reversed())
            guard !template.isEmpty else {
                problem("\(name) needs a command line")
                continue
            }
            if definitions[String(name)] != nil { problem("\(name) is defined again (the last definition counts)") }
            definitions[String(name)] = Definition(name: String(name), template: template, timeoutSeconds: timeout)
        }
        self.init(definitions: definitions, problems: problems)
    }
}
