import Testing

@testable import SyncMerge

@Suite("MergeRules")
struct MergeRulesTests {
    @Test func parsesEveryKindOfRule() {
        let rules = MergeRules(
            parsing: """
                # settings merge key by key
                *.conf merge=text
                *.md   merge=text conflict=markers
                  conflict=markers.txt merge=json
                *.log merge=union
                *.bin\tmerge=keep-both

                saves/*.sav prefer=newest
                /local.cfg prefer=local
                remote.cfg prefer=remote
                *.db merge=command:sqlite-merge %O %A %B
                *.x merge=command:  tool --fast %A %B   timeout=5  
                *.y timeout=7 merge=command:tool --timeout=x
                "my notes/*.txt" merge=union
                "quote\\"d" prefer=local
                crlf.txt prefer=remote\r
                """)
        #expect(rules.problems == [])
        #expect(
            rules.rules.map { "\($0.line) \($0.pattern)" } == [
                "2 *.conf", "3 *.md", "4 conflict=markers.txt", "5 *.log", "6 *.bin", "8 saves/*.sav",
                "9 /local.cfg", "10 remote.cfg", "11 *.db", "12 *.x", "13 *.y", "14 my notes/*.txt",
                "15 quote\"d", "16 crlf.txt",
            ])
        #expect(
            rules.rules.map(\.chain.steps) == [
                [.text(markers: false)], [.text(markers: true)], [.json], [.union], [.keepBoth], [.newest], [.local],
                [.remote], [.command("sqlite-merge %O %A %B", timeoutSeconds: nil)],
                [.command("tool --fast %A %B", timeoutSeconds: 5)], [.command("tool --timeout=x", timeoutSeconds: 7)],
                [.union], [.local], [.remote],
            ])
    }

    /// Swift reads "\r\n" as one character: a split on "\n" alone kept a CRLF file one line.
    @Test func crlfLinesAreLines() {
        let rules = MergeRules(parsing: "*.a merge=union\r\n*.b prefer=local\r\n")
        #expect(rules.problems == [])
        #expect(rules.rules.map(\.line) == [1, 2])
        #expect(rules.rules.map(\.chain.steps) == [[.union], [.local]])
    }

    @Test func badLinesAreReportedAndSkipped() {
        let rules = MergeRules(
            parsing: """
                *.a merge=text
                *.b
                *.c merge=yaml
                *.d merge=text prefer=local
                *.e prefer=local conflict=markers
                *.f merge=union timeout=3
                *.g merge=command:
                *.h merge=command:x timeout=0
                "*.i merge=text
                [abc merge=text
                *.j merge=text merge=union
                *.k colour=red merge=text
                *.l prefer=oldest
                *.m merge=command:x timeout=99999999
                "*.n"x merge=text
                *.o merge=command:x timeout=abc
                *.p timeout=7 merge=command:x timeout=8
                *.z prefer=remote
                """)
        #expect(rules.rules.map(\.pattern) == ["*.a", "*.z"])
        #expect(rules.problems.map(\.line) == Array(2...17))
        #expect(rules.problems.allSatisfy { !$0.message.isEmpty })
        #expect(rules.problems[0] == RuleProblem(line: 2, message: "needs merge=… or prefer=…"))
        #expect(
            rules.problems[1].description
                == ".syncfs-rules:3: unknown merge=yaml (text, json, union, keep-both or command:…)")
        #expect(rules.chain(forPath: "x.z").steps == [.remote])
        #expect(rules.chain(forPath: "x.b").steps == [.text(markers: false)])
    }

    @Test func aByteOrderMarkAndTrailingTextAreHandled() {
        let rules = MergeRules(parsing: "\u{FEFF}*.a prefer=local\n*.b prefer=local # no comments here\n")
        #expect(rules.chain(forPath: "x.a").steps == [.local])
        #expect(rules.problems == [RuleProblem(line: 2, message: "unknown attribute \"#\"")])
    }

    @Test func laterRulesOverrideEarlierOnes() {
        let rules = MergeRules(
            parsing: """
                *.txt merge=union
                notes/*.txt prefer=local
                docs/*.md merge=text conflict=markers
                *.md prefer=remote
                """)
        #expect(rules.chain(forPath: "a.txt").steps == [.union])
        #expect(rules.chain(forPath: "x/notes/a.txt").steps == [.union])
        #expect(rules.chain(forPath: "notes/a.txt").steps == [.local])
        #expect(rules.chain(forPath: "docs/a.md").steps == [.remote])
    }

    @Test func userRulesComeAfterTheDefaults() {
        let rules = MergeRules(parsing: "*.json prefer=newest\n")
        #expect(rules.chain(forPath: "a.json").steps == [.newest])
        #expect(MergeRules.defaults.chain(forPath: "a.json").steps == [.json])
    }

    @Test func defaults() {
        let rules = MergeRules.defaults
        #expect(rules.rules.isEmpty && rules.problems.isEmpty)
        #expect(rules == MergeRules(parsing: "# nothing\n\n"))
        #expect(rules.chain(forPath: "config/settings.json").steps == [.json])
        #expect(rules.chain(forPath: "notes.txt").steps == [.text(markers: false)])
        #expect(rules.chain(forPath: "Makefile").steps == [.text(markers: false)])
        #expect(rules.chain(forPath: "photo.jpg").steps == [.text(markers: false)], "falls through on binary")
        #expect(rules.chain(forPath: "a.JSON").steps == [.text(markers: false)])
    }

    /// A content policy on a version that is not text falls through (to the implied keep-both):
    /// a line merge of binary data would corrupt it. The other policies apply to any content.
    @Test func contentPoliciesNeedText() {
        let binary = MergeVersions(
            content: MergeVersions.Content(base: [0, 1], local: [0, 2], remote: [0, 3]), localSize: 2, remoteSize: 2,
            localModified: 1, remoteModified: 2)
        for policy in [MergePolicy.text(markers: false), .text(markers: true), .json, .union] {
            #expect(policy.decide(binary) == .fallThrough("both changed the content; a version is not text"))
        }
        #expect(MergePolicy.newest.decide(binary) == .remote)
        #expect(MergePolicy.local.decide(binary) == .local)
        #expect(MergePolicy.remote.decide(binary) == .remote)
        #expect(MergePolicy.keepBoth.decide(binary) == .keepBoth)
    }

    @Test func globsInRules() {
        let rules = MergeRules(
            parsing: """
                /top.txt prefer=local
                **/gen/*.c prefer=remote
                logs/** merge=union
                [ab]?.cfg merge=json
                \\#literal prefer=newest
                "with space.txt" merge=keep-both
                with\\ escape.txt merge=keep-both
                """)
        #expect(rules.problems == [])
        #expect(rules.chain(forPath: "top.txt").steps == [.local])
        #expect(rules.chain(forPath: "x/top.txt").steps == [.text(markers: false)])
        #expect(rules.chain(forPath: "a/b/gen/x.c").steps == [.remote])
        #expect(rules.chain(forPath: "gen/x.c").steps == [.remote])
        #expect(rules.chain(forPath: "logs/2026/a.log").steps == [.union])
        #expect(rules.chain(forPath: "x/logs/a.log").steps == [.text(markers: false)])
        #expect(rules.chain(forPath: "d/b1.cfg").steps == [.json])
        #expect(rules.chain(forPath: "c1.cfg").steps == [.text(markers: false)])
        #expect(rules.chain(forPath: "#literal").steps == [.newest])
        #expect(rules.chain(forPath: "dir/with space.txt").steps == [.keepBoth])
        #expect(rules.chain(forPath: "with escape.txt").steps == [.keepBoth])
    }
}
