import Testing

@testable import SyncMerge

/// The matcher against `git check-ignore` (the reference): every path of every table must be
/// decided by the same line of the same file, ignored or not, as git decides it.
@Suite(
    "Ignore patterns as git reads them", .enabled(if: GitReference.git != nil, Comment(rawValue: GitReference.missing)))
struct IgnoreGitReferenceTests {
    /// Patterns checked one by one, each alone in a file of its own folder and again in a file
    /// two folders below, against `paths`.
    static let patterns = [
        "*", "*.txt", "*.log", "a", "/a", "a/", "dir", "dir/", "/dir/", "dir/a", "dir/*", "dir/**", "dir/**/a.txt",
        "**/a.txt", "**/sub", "**/sub/", "sub/**", "**", "/**", "**/", "d*r", "d?r", "d[i]r", "d[!x]r", "d[^x]r",
        "[a-c]*", "[[:alpha:]]", "[[:digit:]]y", "*[[:space:]]*", "*[[:upper:]]*", "[[:punct:]]*", "[[:alnum:]]",
        "[[:xdigit:]][[:xdigit:]]", "[[:lower:]]*", "foo**/bar", "foo/**/bar", "foo*/bar", "f**", "**o", "*.t?t",
        "*.[tl]*", "\\#hash", "\\!bang", "#hash", "!bang", "name\\ with\\ space", "name with space", "na\\[me]",
        "na[[]me]", "trail\\ ", "trail ", "trail\\  ", "ünï/", "*.txt/", "doc/*.md", "/doc/**/*.md", "a/b/c/**",
        "b/**/e", "*/b/*", "**/b/**", "x/**/", "[", "[abc", "foo\\", "a/b**", "**/**/a.txt", "dir/**/**",
        "***/a.txt", "dir/***", "[]]*", "[!]]*", "[a-]*", "[]-a]*", "*\\*", "\\a*", "[[:alpha:]-z]*", "[x-z-a]*",
        "[z-a]x", "[[:a]*", "[[:]*", "d/", "*/", "/*", "*/*", "sub", "!dir/a", "**/*.txt", "*.TXT", "ünï", "*ï*",
        "çødé.*", "??", "???*", "*.swp", ".*", ".*.swp", "*~", "~$*", ".#*", ".~lock.*#", "sub/deep", "/sub/deep",
        "**/deep/", "dir/sub/", "*/sub/**", "dir/*/a.txt", "[.]hidden", "\\*star", "x\\/y/", "foo/**", "foo/**/",
        "**/bar", "fo[o]/**/b?r", "\t", "a b", "[[:blank:]]*", "*[[:cntrl:]]*", "*[[:graph:]]", "[[:print:]]*",
    ]

    static let paths = [
        "a.txt", "b.log", "dir/", "dir/a", "dir/a.txt", "dir/sub/a.txt", "dir/sub/deep/x.log", "dir/sub/deep/",
        "x/dir/a",
        "foo/bar", "foo/x/bar", "foo/x/y/bar", "fooX/bar", "bar", "x/bar", "abc/def", ".hidden", ".hidden.swp",
        "dir/.x.swp", "name with space", "na[me]", "nam", "#hash", "!bang", "ünï/çødé.txt", "trail ", "trail",
        "trail  ", "doc/a.md", "doc/sub/a.md", "sub/doc/a.md", "sub/deep", "a/b/c/d/e", "a/bc/d", "zx", "1y",
        "Upper.TXT",
        "]x", "-y", "*star", "x/a", "x/y/z/", "ddr", "dir.txt/", "b/x", "q/b/r/s", "notes~", "~$report.docx",
        ".#lock", ".~lock.report.odt#", "tab\tname", "a b", "9f", "Ab",
    ]

    @Test("each pattern alone, in a folder and two folders below it")
    func patternsOneByOne() throws {
        var files: [String: String] = [:]
        var paths: [String] = []
        for (index, pattern) in Self.patterns.enumerated() {
            files["t\(index)"] = pattern + "\n"
            files["t\(index)/dir/sub"] = pattern + "\n"
            paths += Self.paths.map { "t\(index)/\($0)" }
        }
        let table = IgnoreTable(name: "one by one", files: files, paths: paths)
        try expectSameAsGit(table)
    }

    static let tables = [
        IgnoreTable(
            name: "syntax",
            files: [
                "": [
                    "# a comment",
                    "\\#hash",
                    "\\!bang",
                    "*.log",
                    "!keep.log",
                    "build/",
                    "/root-only.txt",
                    "doc/*.md",
                    "tmp",
                    "trailing-space\\ ",
                    "trailspaces   ",
                    "foo**/bar",
                    "a/b**",
                    "!a/bc/",
                    "[z-a]x",
                    "[!0-9]y",
                    "[[:digit:]]z",
                    "**/deep/x",
                    "q/**",
                    "m/**/n",
                    "*.swp",
                    "! not-a-negation-of-anything",
                    " leading-space",
                    "",
                ].joined(separator: "\n"),
                "sub": "!*.log\n*.txt\n/local\n",
            ],
            paths: [
                "#hash", "!bang", "a.log", "keep.log", "sub/a.log", "sub/b.txt", "sub/local", "sub/x/local", "local",
                "build/x", "sub/build/", "root-only.txt", "sub/root-only.txt", "doc/a.md", "doc/x/a.md", "sub/doc/a.md",
                "tmp/", "x/tmp", "trailing-space ", "trailing-space", "trailspaces", "foo/bar", "fooX/bar", "foo/x/bar",
                "fooXbar", "a/bc/d", "a/bc/e/", "zx", "ax", "1y", "ay", "1z", "az", "deep/x", "q/deep/x", "q/r/deep/x",
                "qq/a", "m/n", "m/a/n", "m/a/b/n", "m/an", "a.swp", "unicode/ü.log", "sp ace/x.log", "br[a]ck/y",
                " leading-space", "leading-space", " not-a-negation-of-anything",
            ]),
        IgnoreTable(
            name: "nested files, CRLF and a byte order mark",
            files: [
                "":
                    "\u{FEFF}# CRLF\r\n*.log\r\n!important.log\r\nbuild/\r\n\r\n/top\r\nspaced   \r\nkeep\\ \r\n*.tmp \r\n",
                "a": "!*.log\n!build/\n*.md\n!README.md\n",
                "a/b": "*.log\nREADME.md\n!/x.tmp\n/c/\n",
                "skip": "*\n!*.keep\n",
                "nested": "sub/\n!sub/file\n",
                "nested/sub": "!file\n",
                "only-files": "*\n!*/\n",
                "reinclude": "/*\n!/kept/\n/kept/*\n!/kept/this\n",
            ],
            paths: [
                "x.log", "important.log", "a/x.log", "a/b/x.log", "a/b/c/x.log", "a/important.log", "a/b/important.log",
                "build/o", "a/build/o", "a/b/build/o", "a/x.md", "a/README.md", "a/b/README.md", "a/b/x.tmp",
                "a/b/y.tmp", "x.tmp", "a/b/c/d", "c/d", "top", "a/top", "spaced", "keep ", "keep", "skip/a",
                "skip/b.keep", "skip/sub/c.keep", "skip/sub/d", "nested/sub/file", "nested/sub/other", "nested/file",
                "only-files/f", "only-files/d/f", "only-files/d/e/", "reinclude/gone", "reinclude/kept/this",
                "reinclude/kept/that", "reinclude/other/this",
            ]),
        IgnoreTable(
            name: "names with spaces, dots, unicode and brackets",
            files: [
                "": "Ünïcode/\n*.bäk\n[[]draft]*\n* copy*\n...\n.*.\n\\ lead\n",
                "Ünïcode/x": "!*.bäk\n",
            ],
            paths: [
                "Ünïcode/x/a.bäk", "x/a.bäk", "x/a.bak", "[draft] plan.txt", "draft.txt", "photo copy.jpg",
                "photo copy 2.jpg", "photo.jpg", "...", "..x", ".x.", "x..", " lead", "lead", "日本語/ファイル.bäk",
                "emoji 🎉/a.bäk", "NFD e\u{301}.bäk",
            ]),
    ]

    @Test("nested ignore files", arguments: tables)
    func nestedFiles(_ table: IgnoreTable) throws {
        try expectSameAsGit(table)
    }

    @Test("the defaults, as git's core.excludesFile")
    func defaults() throws {
        let names = [
            ".notes.txt.swp", ".notes.txt.swo", ".notes.txt.swx", "notes.txt.swp", ".x.kate-swp", "report.odt~",
            "~", "#notes.org#", "#", "##", ".#notes.org", ".goutputstream-ABC123", ".~lock.report.odt#",
            ".~lock.report.odt", "~$report.docx", "~WRL0001.tmp", "~WRD0003.tmp", "data.tmp", "lu1234.tmp",
            ".DS_Store", "Thumbs.db", "desktop.ini", "Desktop.ini", "notes.txt", ".hidden", "a~b", "~a",
        ]
        let paths = names + names.map { "folder/" + $0 } + names.map { "deep/er/" + $0 + "/" }
        let table = IgnoreTable(name: "defaults", files: [:], paths: paths)
        let git = try GitReference.verdicts(table, excludes: IgnoreFile.defaultPatterns.joined(separator: "\n"))
        let rules = IgnoreRules(defaults: true, synced: [:], local: nil)
        #expect(GitReference.disagreements(table, rules: rules, git: git) == [])
        #expect(rules.isIgnored(".notes.txt.swp", isDirectory: false))
        #expect(!rules.isIgnored("data.tmp", isDirectory: false))
    }

    private func expectSameAsGit(_ table: IgnoreTable, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let git = try GitReference.verdicts(table)
        let rules = IgnoreRules(
            defaults: false, synced: table.files.mapValues { IgnoreFile(parsing: $0) }, local: nil)
        let disagreements = GitReference.disagreements(table, rules: rules, git: git)
        #expect(disagreements == [], sourceLocation: sourceLocation)
        // The table decides something both ways (a table that matches nothing proves little).
        let decided = git.values.compactMap { $0 }
        #expect(decided.contains { $0.ignored }, sourceLocation: sourceLocation)
        #expect(decided.count < git.count, sourceLocation: sourceLocation)
    }
}
