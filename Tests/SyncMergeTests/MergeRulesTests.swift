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
            rules.rules.map(\.policy) == [
                .text(markers: false), .text(markers: true), .json, .union, .keepBoth, .newest, .local, .remote,
                .command("sqlite-merge %O %A %B", timeoutSeconds: nil),
                .command("tool --fast %A %B", timeoutSeconds: 5),
                .command("tool --timeout=x", timeoutSeconds: 7), .union, .local, .remote,
            ])
    }

    /// Swift reads "\r\n" as one character: a split on "\n" alone kept a CRLF file one line.
    @Test func crlfLinesAreLines() {
        let rules = MergeRules(parsing: "*.a merge=union\r\n*.b prefer=local\r\n")
        #expect(rules.problems == [])
        #expect(rules.rules.map(\.line) == [1, 2])
        #expect(rules.rules.map(\.policy) == [.union, .local])
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
        #expect(rules.policy(forPath: "x.z", isText: true) == .remote)
        #expect(rules.policy(forPath: "x.b", isText: true) == .text(markers: false))
    }

    @Test func aByteOrderMarkAndTrailingTextAreHandled() {
        let rules = MergeRules(parsing: "\u{FEFF}*.a prefer=local\n*.b prefer=local # no comments here\n")
        #expect(rules.policy(forPath: "x.a", isText: true) == .local)
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
        #expect(rules.policy(forPath: "a.txt", isText: true) == .union)
        #expect(rules.policy(forPath: "x/notes/a.txt", isText: true) == .union)
        #expect(rules.policy(forPath: "notes/a.txt", isText: true) == .local)
        #expect(rules.policy(forPath: "docs/a.md", isText: true) == .remote)
    }

    @Test func userRulesComeAfterTheDefaults() {
        let rules = MergeRules(parsing: "*.json prefer=newest\n")
        #expect(rules.policy(forPath: "a.json", isText: true) == .newest)
        #expect(MergeRules.defaults.policy(forPath: "a.json", isText: true) == .json)
    }

    @Test func defaults() {
        let rules = MergeRules.defaults
        #expect(rules.rules.isEmpty && rules.problems.isEmpty)
        #expect(rules == MergeRules(parsing: "# nothing\n\n"))
        #expect(rules.policy(forPath: "config/settings.json", isText: true) == .json)
        #expect(rules.policy(forPath: "settings.json", isText: false) == .keepBoth)
        #expect(rules.policy(forPath: "notes.txt", isText: true) == .text(markers: false))
        #expect(rules.policy(forPath: "Makefile", isText: true) == .text(markers: false))
        #expect(rules.policy(forPath: "photo.jpg", isText: false) == .keepBoth)
        #expect(rules.policy(forPath: "a.JSON", isText: true) == .text(markers: false))
    }

    @Test func contentPoliciesNeedText() {
        let rules = MergeRules(
            parsing: """
                *.t merge=text
                *.m merge=text conflict=markers
                *.j merge=json
                *.u merge=union
                *.n prefer=newest
                *.l prefer=local
                *.r prefer=remote
                *.c merge=command:x
                """)
        for ext in ["t", "m", "j", "u"] {
            #expect(rules.policy(forPath: "f.\(ext)", isText: false) == .keepBoth)
            #expect(rules.policy(forPath: "f.\(ext)", isText: true) != .keepBoth)
        }
        #expect(rules.policy(forPath: "f.n", isText: false) == .newest)
        #expect(rules.policy(forPath: "f.l", isText: false) == .local)
        #expect(rules.policy(forPath: "f.r", isText: false) == .remote)
        #expect(rules.policy(forPath: "f.c", isText: false) == .command("x", timeoutSeconds: nil))
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
        #expect(rules.policy(forPath: "top.txt", isText: true) == .local)
        #expect(rules.policy(forPath: "x/top.txt", isText: true) == .text(markers: false))
        #expect(rules.policy(forPath: "a/b/gen/x.c", isText: true) == .remote)
        #expect(rules.policy(forPath: "gen/x.c", isText: true) == .remote)
        #expect(rules.policy(forPath: "logs/2026/a.log", isText: true) == .union)
        #expect(rules.policy(forPath: "x/logs/a.log", isText: true) == .text(markers: false))
        #expect(rules.policy(forPath: "d/b1.cfg", isText: true) == .json)
        #expect(rules.policy(forPath: "c1.cfg", isText: true) == .text(markers: false))
        #expect(rules.policy(forPath: "#literal", isText: true) == .newest)
        #expect(rules.policy(forPath: "dir/with space.txt", isText: true) == .keepBoth)
        #expect(rules.policy(forPath: "with escape.txt", isText: true) == .keepBoth)
    }
}
