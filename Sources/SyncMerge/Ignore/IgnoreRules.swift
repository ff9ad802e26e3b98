/// Which paths of a folder stay local: the patterns of the built-in defaults, of the synced
/// `.syncfs-ignore` files (any folder) and of the mount's local ignore file, in gitignore syntax.
///
/// Precedence, highest first: the local file; then the synced files, the deepest folder first;
/// then the defaults. Within one file the last matching line decides. A path below an ignored
/// folder is ignored whatever the patterns say of it (git's rule: a file cannot be re-included
/// when a parent folder is excluded).
public struct IgnoreRules: Sendable {
    /// The name of a synced ignore file, in any folder.
    public static let syncedFileName = ".syncfs-ignore"

    /// The rules that ignore nothing.
    public static let none = IgnoreRules(defaults: false, synced: [:], local: nil)

    let defaults: IgnoreFile?
    /// By folder: "" for the root, "a/b" for a folder below it.
    let synced: [String: IgnoreFile]
    let local: IgnoreFile?

    public init(defaults: Bool, synced: [String: IgnoreFile], local: IgnoreFile?) {
        self.defaults = defaults ? IgnoreFile.defaults : nil
        self.synced = synced
        self.local = local
    }

    /// Whether `path` is ignored (see `match`).
    public func isIgnored(_ path: String, isDirectory: Bool) -> Bool {
        match(path, isDirectory: isDirectory)?.ignored ?? false
    }

    /// The line that decides `path` ("/"-separated, relative to the folder's root, no leading
    /// "/"), or nil when no line matches it. For a path below an ignored folder, the folder's
    /// match.
    public func match(_ path: String, isDirectory: Bool) -> IgnoreMatch? {
        let components = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !components.isEmpty else { return nil }
        for depth in 1..<components.count {
            let folder = components[0..<depth].joined(separator: "/")
            if let match = ownMatch(folder, isDirectory: true), match.ignored { return match }
        }
        return ownMatch(components.joined(separator: "/"), isDirectory: isDirectory)
    }

    /// The line that decides `path` itself, its folders above not considered.
    private func ownMatch(_ path: String, isDirectory: Bool) -> IgnoreMatch? {
        if let local, let match = local.lastMatch(path, isDirectory: isDirectory, source: .local) { return match }
        let folders = synced.keys.filter { $0.isEmpty || path.hasPrefix($0 + "/") }.sorted { $0.count > $1.count }
        for folder in folders {
            let relative = folder.isEmpty ? path : String(path.dropFirst(folder.count + 1))
            if let match = synced[folder]?.lastMatch(
                relative, isDirectory: isDirectory, source: .synced(folder: folder))
            {
                return match
            }
        }
        return defaults?.lastMatch(path, isDirectory: isDirectory, source: .defaults)
    }
}

/// Where an ignore line comes from.
public enum IgnoreSource: Hashable, Sendable, Codable {
    /// The built-in list (`IgnoreFile.defaultPatterns`).
    case defaults
    /// The synced `.syncfs-ignore` of `folder` ("" for the root).
    case synced(folder: String)
    /// The mount's local ignore file (never synced).
    case local
}

/// The line that decided a path.
public struct IgnoreMatch: Sendable, Equatable {
    /// False when the deciding line is a `!` line: the path is not ignored.
    public var ignored: Bool
    public var source: IgnoreSource
    /// 1-based line of the file (of `IgnoreFile.defaultPatterns` for the defaults).
    public var line: Int
    /// The line as written.
    public var pattern: String
}

/// One ignore file, parsed: its lines in order. Lines that cannot be used are skipped and
/// reported in `problems`.
public struct IgnoreFile: Sendable {
    struct Line: Sendable {
        var number: Int
        var text: String
        var negated: Bool
        var directoryOnly: Bool
        var glob: Glob
    }

    /// The temporary and system files of editors, office suites and file managers: ignored
    /// unless the mount says `--no-default-ignores`.
    public static let defaultPatterns = [
        ".*.swp", ".*.swx", "*~", ".~lock.*#", "~$*", ".#*", ".DS_Store", "Thumbs.db", "desktop.ini",
    ]

    static let defaults = IgnoreFile(parsing: defaultPatterns.joined(separator: "\n"))

    let lines: [Line]
    public let problems: [RuleProblem]

    public init(parsing text: String) {
        var lines: [Line] = []
        var problems: [RuleProblem] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var pattern = Substring(raw)
            if pattern.hasSuffix("\r") { pattern = pattern.dropLast() }
            while pattern.hasSuffix(" ") && !pattern.hasSuffix("\\ ") { pattern = pattern.dropLast() }
            guard !pattern.isEmpty, !pattern.hasPrefix("#") else { continue }
            let negated = pattern.hasPrefix("!")
            if negated { pattern = pattern.dropFirst() }
            let directoryOnly = pattern.hasSuffix("/")
            if directoryOnly { pattern = pattern.dropLast() }
            do {
                let glob = try Glob(String(pattern))
                lines.append(
                    Line(
                        number: index + 1, text: String(raw), negated: negated, directoryOnly: directoryOnly,
                        glob: glob))
            } catch {
                problems.append(RuleProblem(line: index + 1, message: error.message))
            }
        }
        self.lines = lines
        self.problems = problems
    }

    /// The last line matching `path` (relative to this file's folder).
    func lastMatch(_ path: String, isDirectory: Bool, source: IgnoreSource) -> IgnoreMatch? {
        for line in lines.reversed() where !line.directoryOnly || isDirectory {
            if line.glob.matches(path) {
                return IgnoreMatch(ignored: !line.negated, source: source, line: line.number, pattern: line.text)
            }
        }
        return nil
    }
}
