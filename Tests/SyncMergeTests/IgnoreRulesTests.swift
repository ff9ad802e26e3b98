import Testing

@testable import SyncMerge

/// What git cannot check: the precedence of the mount's files (ours, not git's), the problems
/// reported for unusable lines, and where the matcher deviates from git on purpose.
@Suite("Ignore rules")
struct IgnoreRulesTests {
    @Test("the local file outranks every synced file, the defaults rank lowest")
    func precedenceOfFiles() {
        let rules = IgnoreRules(
            defaults: true,
            synced: ["": IgnoreFile(parsing: "*.log\n!.*.swp\n"), "a": IgnoreFile(parsing: "!*.log\nbuild/\n")],
            local: IgnoreFile(parsing: "!keep.log\nsecret.txt\n!a/build/\n"))
        #expect(rules.match("x.log", isDirectory: false) == match(true, .synced(folder: ""), 1, "*.log"))
        #expect(rules.match("a/x.log", isDirectory: false) == match(false, .synced(folder: "a"), 1, "!*.log"))
        #expect(rules.match("a/keep.log", isDirectory: false) == match(false, .local, 1, "!keep.log"))
        #expect(rules.match("keep.log", isDirectory: false) == match(false, .local, 1, "!keep.log"))
        #expect(rules.match("a/secret.txt", isDirectory: false) == match(true, .local, 2, "secret.txt"))
        // A synced "!" line outranks the defaults.
        #expect(rules.match(".notes.swp", isDirectory: false) == match(false, .synced(folder: ""), 2, "!.*.swp"))
        #expect(rules.match("a/.notes.swo", isDirectory: false)?.source == .defaults)
        // The local file re-includes a folder a synced file ignores, and so what is below it.
        #expect(rules.match("a/build/out.o", isDirectory: false) == nil)
        #expect(rules.match("a/b/build/out.o", isDirectory: false) == match(true, .synced(folder: "a"), 2, "build/"))
        #expect(IgnoreRules.none.match("x.log", isDirectory: false) == nil)
    }

    @Test("a path below an ignored folder is ignored whatever lines say of it")
    func belowAnIgnoredFolder() {
        let rules = IgnoreRules(
            defaults: false, synced: ["": IgnoreFile(parsing: "cache/\n!cache/keep\n")],
            local: IgnoreFile(parsing: "!keep\n"))
        #expect(rules.match("cache/keep", isDirectory: false) == match(true, .synced(folder: ""), 1, "cache/"))
        #expect(rules.isIgnored("cache/x/y/z", isDirectory: true))
        #expect(!rules.isIgnored("cache", isDirectory: false))
    }

    @Test("paths with a leading, trailing or doubled slash")
    func untidyPaths() {
        let rules = IgnoreRules(defaults: false, synced: ["a/": IgnoreFile(parsing: "/b/c\n")], local: nil)
        #expect(rules.isIgnored("/a//b/c/", isDirectory: false))
        #expect(rules.isIgnored("a/b/c", isDirectory: false))
        #expect(rules.match("", isDirectory: true) == nil)
        #expect(rules.match("/", isDirectory: true) == nil)
    }

    @Test("unusable lines are problems, with their line numbers; the others still work")
    func problems() {
        let long = String(repeating: "x", count: IgnoreFile.maximumPatternLength + 1)
        let file = IgnoreFile(parsing: "a[bc\n\(long)\nok\nends\\\n[[:nope:]]\n\(long.dropLast())\n")
        #expect(file.problems.map(\.line) == [1, 2, 4, 5])
        #expect(file.problems[1].message.contains("longer than 4096 bytes"))
        let rules = IgnoreRules(defaults: false, synced: ["": file], local: nil)
        #expect(rules.isIgnored("ok", isDirectory: false))
        #expect(rules.isIgnored(String(long.dropLast()), isDirectory: false))
        #expect(!rules.isIgnored("abc", isDirectory: false))
    }

    @Test("? and [...] match one Unicode character (git: one byte)")
    func unicodeCharacters() {
        let rules = IgnoreRules(defaults: false, synced: ["": IgnoreFile(parsing: "r?sum?\n[é]t[!a]\n")], local: nil)
        #expect(rules.isIgnored("résumé", isDirectory: false))
        #expect(rules.isIgnored("été", isDirectory: false))
        #expect(!rules.isIgnored("éta", isDirectory: false))
        // No normalization: a decomposed "é" is two characters.
        #expect(!rules.isIgnored("e\u{301}té", isDirectory: false))
    }

    @Test("the defaults: the documented list, nothing else")
    func defaultList() {
        let rules = IgnoreRules(defaults: true, synced: [:], local: nil)
        for name in [".notes.txt.swp", "x~", "#x#", ".#x", ".~lock.report.odt#", "~$report.docx", "~WRL0001.tmp"] {
            #expect(rules.isIgnored("folder/" + name, isDirectory: false), "\(name)")
        }
        for name in ["data.tmp", "notes.swp", "x#", "#", "report.odt", "lock"] {
            #expect(!rules.isIgnored("folder/" + name, isDirectory: false), "\(name)")
        }
        #expect(IgnoreFile.defaults.problems.isEmpty)
        #expect(IgnoreFile.defaults.lines.count == IgnoreFile.defaultPatterns.count)
    }

    private func match(_ ignored: Bool, _ source: IgnoreSource, _ line: Int, _ pattern: String) -> IgnoreMatch {
        IgnoreMatch(ignored: ignored, source: source, line: line, pattern: pattern)
    }
}
