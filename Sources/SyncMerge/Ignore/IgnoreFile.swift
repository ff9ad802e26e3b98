/// One ignore file, parsed as git parses a `.gitignore`: its pattern lines in order. Lines that
/// cannot match anything (a malformed `[...]`, a trailing unescaped `\`, a pattern longer than
/// `maximumPatternLength`) are skipped and reported in `problems`.
///
/// Lines end in "\n" or "\r\n"; a leading byte order mark is skipped. A line that is empty or
/// starts with `#` is no pattern (`\#` starts a pattern with `#`, `\!` one with `!`). Trailing
/// spaces are dropped unless escaped with `\`.
public struct IgnoreFile: Sendable {
    struct Line: Sendable {
        var number: Int
        var text: String
        var pattern: IgnorePattern
    }

    /// The longest pattern line, in UTF-8 bytes: longer lines are refused (a problem), which
    /// bounds a match's memory and time by the path's length times this.
    public static let maximumPatternLength = 4096

    let lines: [Line]
    /// The lines' name filters, apart so that trying them costs no reference counting.
    let nameFilters: [NameFilter]
    public let problems: [RuleProblem]

    public init(parsing text: String) {
        var lines: [Line] = []
        var problems: [RuleProblem] = []
        var body = Substring(text)
        if body.unicodeScalars.first == "\u{FEFF}" { body = Substring(body.unicodeScalars.dropFirst()) }
        for (index, rawLine) in body.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            var line = rawLine
            if line.last == 0x0D { line = line.dropLast() }
            guard let first = line.first, first != UInt8(ascii: "#") else { continue }
            let written = String(Substring(line))
            let pattern = Self.trimmingTrailingSpaces(Substring(line))
            guard pattern.utf8.count <= Self.maximumPatternLength else {
                problems.append(
                    RuleProblem(
                        line: index + 1,
                        message: "pattern longer than \(Self.maximumPatternLength) bytes: ignored"))
                continue
            }
            do throws(IgnoreCharacterSet.Malformed) {
                guard let parsed = try IgnorePattern(pattern) else { continue }
                lines.append(Line(number: index + 1, text: written, pattern: parsed))
            } catch {
                problems.append(RuleProblem(line: index + 1, message: "\(error.message): never matches"))
            }
        }
        self.lines = lines
        nameFilters = lines.map(\.pattern.nameFilter)
        self.problems = problems
    }

    /// `line` without its trailing spaces, except one escaped by `\` (git's rule).
    static func trimmingTrailingSpaces(_ line: Substring) -> Substring {
        var firstTrailingSpace: Substring.UTF8View.Index?
        var index = line.utf8.startIndex
        while index < line.utf8.endIndex {
            switch line.utf8[index] {
            case UInt8(ascii: " "):
                if firstTrailingSpace == nil { firstTrailingSpace = index }
            case UInt8(ascii: "\\"):
                index = line.utf8.index(after: index)
                guard index < line.utf8.endIndex else { return line }
                firstTrailingSpace = nil
            default:
                firstTrailingSpace = nil
            }
            index = line.utf8.index(after: index)
        }
        guard let firstTrailingSpace else { return line }
        return Substring(line.utf8[..<firstTrailingSpace])
    }
}
