import Testing

@testable import SyncMerge

/// Rule chains (`merge=json else prefer=newest`): how a line parses, and how a chain falls
/// through from step to step.
@Suite("MergeChain")
struct MergeChainTests {
    func steps(_ line: String) -> [MergePolicy]? {
        let rules = MergeRules(parsing: line)
        return rules.problems.isEmpty ? rules.rules.first?.chain.steps : nil
    }

    func problem(_ line: String) -> String? {
        MergeRules(parsing: line).problems.first?.message
    }

    func pointer(_ text: String) -> JSONPointer { try! JSONPointer(Substring(text)) }

    @Test func chainsParse() {
        #expect(steps("*.sav merge=json else prefer=newest") == [.json, .newest])
        #expect(steps("*.sav merge=json else keep-both") == [.json, .keepBoth])
        #expect(steps("*.sav merge=json\telse\tmerge=keep-both") == [.json, .keepBoth])
        #expect(steps("*.bin keep-both") == [.keepBoth])
        #expect(
            steps("*.sav merge=json else prefer=max(json:/score) else prefer=larger else prefer=newest")
                == [.json, .maximum(pointer("/score")), .larger, .newest])
        #expect(steps("*.sav prefer=min(json:/level) else prefer=smaller") == [.minimum(pointer("/level")), .smaller])
        #expect(steps("*.x prefer=max(json:) else prefer=remote") == [.maximum(pointer("")), .remote])
        // Attributes bind to their own step.
        #expect(
            steps("*.md merge=text conflict=markers else prefer=local")
                == [.text(markers: true), .local])
        #expect(
            steps("*.db merge=command:sqlite-merge timeout=5 else merge=text conflict=markers")
                == [.command("sqlite-merge", timeoutSeconds: 5), .text(markers: true)])
        #expect(
            steps("*.db timeout=9 merge=command:tool else prefer=newest")
                == [.command("tool", timeoutSeconds: 9), .newest])
        // A word merely containing "else" is not the separator.
        #expect(steps("*.db merge=command:elsewhere") == [.command("elsewhere", timeoutSeconds: nil)])
        let eight = "*.x " + Array(repeating: "prefer=larger", count: 7).joined(separator: " else ") + " else keep-both"
        #expect(steps(eight)?.count == MergeChain.maximumSteps)
    }

    @Test func chainsPrintAsWritten() {
        let line = "merge=json else prefer=max(json:/a~1b) else merge=command:x timeout=3 else prefer=newest"
        #expect(steps("*.sav " + line).map { MergeChain($0).description } == line)
    }

    @Test func malformedChainsAreRulesErrors() {
        let table: [(String, String)] = [
            ("*.a else prefer=newest", "\"else\" needs a policy before and after it"),
            ("*.a merge=json else", "\"else\" needs a policy before and after it"),
            ("*.a merge=json else else prefer=local", "\"else\" needs a policy before and after it"),
            ("*.a prefer=newest else merge=json", "nothing after prefer=newest is used (it always decides)"),
            ("*.a merge=keep-both else prefer=local", "nothing after merge=keep-both is used (it always decides)"),
            ("*.a prefer=remote else keep-both", "nothing after prefer=remote is used (it always decides)"),
            ("*.a merge=command:x else merge=command:y", "at most one merge=command: in a rule"),
            (
                "*.a merge=json else prefer=newest conflict=markers",
                "policy 2: conflict=markers needs merge=text"
            ),
            ("*.a merge=json timeout=4 else prefer=newest", "policy 1: timeout= needs merge=command:…"),
            (
                "*.a merge=json else prefer=oldest",
                "policy 2: unknown prefer=oldest (newest, local, remote, larger, smaller, max(json:POINTER) or min(json:POINTER))"
            ),
            ("*.a merge=json prefer=max(json:/a)", "both merge= and prefer="),
            ("*.a prefer=max(/score)", "prefer=max(…) takes json:POINTER, as in prefer=max(json:/score)"),
            ("*.a prefer=min(json:/a b)", "prefer=min( without its closing \")\" (a JSON Pointer here holds no space)"),
            (
                "*.a prefer=max",
                "unknown prefer=max (newest, local, remote, larger, smaller, max(json:POINTER) or min(json:POINTER))"
            ),
            (
                "*.a prefer=maximum(json:/a)",
                "unknown prefer=maximum(json:/a) (newest, local, remote, larger, smaller, max(json:POINTER) or min(json:POINTER))"
            ),
            ("*.a prefer=max(json:score)", "bad JSON Pointer \"score\": it must be empty or start with \"/\""),
            (
                "*.a prefer=max(json:/a~2)",
                "bad JSON Pointer \"/a~2\": \"~\" must be followed by 0 or 1 (~0 is \"~\", ~1 is \"/\")"
            ),
            (
                "*.a prefer=max(json:/a~)",
                "bad JSON Pointer \"/a~\": \"~\" must be followed by 0 or 1 (~0 is \"~\", ~1 is \"/\")"
            ),
            ("*.a prefer=larger prefer=smaller", "prefer= given twice"),
        ]
        for (line, message) in table {
            #expect(problem(line) == message, "\(line)")
        }
        let nine = "*.x " + Array(repeating: "prefer=larger", count: 9).joined(separator: " else ")
        #expect(problem(nine) == "a rule has at most 8 policies (7 \"else\")")
    }

    /// A hostile rules file costs one pass per line, whatever it holds, and its errors stay short.
    @Test func hostileLinesAreBounded() {
        let elses = "*.x " + Array(repeating: "prefer=larger", count: 10_000).joined(separator: " else ")
        let longPointer = "*.x prefer=max(json:/" + String(repeating: "a/", count: 600_000) + "b)"
        let longWord = "*.x prefer=" + String(repeating: "z", count: 500_000)
        let clock = ContinuousClock()
        let started = clock.now
        let rules = MergeRules(parsing: [elses, longPointer, longWord].joined(separator: "\n"))
        #expect(clock.now - started < .seconds(5))
        #expect(rules.rules.isEmpty)
        #expect(rules.problems.map(\.line) == [1, 2, 3])
        #expect(rules.problems[0].message == "a rule has at most 8 policies (7 \"else\")")
        #expect(rules.problems[1].message.hasSuffix(": longer than 1024 bytes"))
        #expect(rules.problems.allSatisfy { $0.message.count < 300 }, "\(rules.problems.map(\.message.count))")
    }

    // MARK: - Walking a chain

    func versions(
        base: String = "", local: String, remote: String, localModified: Int64 = 1, remoteModified: Int64 = 2
    ) -> MergeVersions {
        MergeVersions(
            content: MergeVersions.Content(base: bytes(base), local: bytes(local), remote: bytes(remote)),
            localSize: Int64(local.utf8.count), remoteSize: Int64(remote.utf8.count), localModified: localModified,
            remoteModified: remoteModified)
    }

    func walk(_ line: String, _ versions: MergeVersions) -> MergeChainOutcome? {
        guard let steps = steps("* " + line) else { return nil }
        return MergeChain(steps).decide { $0.decide(versions) }
    }

    @Test func aCleanMergeDecidesFirst() {
        let merged = walk(
            "merge=json else prefer=local",
            versions(base: #"{"a":1,"b":1}"#, local: #"{"a":2,"b":1}"#, remote: #"{"a":1,"b":2}"#))
        #expect(merged == .merged(bytes(#"{"a":2,"b":2}"#), markers: false))
    }

    @Test func eachReasonFallsThroughToTheNextStep() {
        let conflicting = versions(base: #"{"score":1}"#, local: #"{"score":5}"#, remote: #"{"score":7}"#)
        #expect(walk("merge=json else prefer=max(json:/score)", conflicting) == .remote)
        #expect(walk("merge=json else prefer=min(json:/score)", conflicting) == .local)
        #expect(walk("merge=text else prefer=newest", conflicting) == .remote, "overlapping lines")
        let notJSON = versions(base: "x", local: "y", remote: "z", localModified: 9)
        #expect(walk("merge=json else prefer=newest", notJSON) == .local, "not JSON: the newest (local) wins")
        let binary = MergeVersions(
            content: MergeVersions.Content(base: [0], local: [0, 1], remote: [0, 2, 3]), localSize: 2,
            remoteSize: 3, localModified: 1, remoteModified: 2)
        #expect(MergeChain([.union, .larger]).decide { $0.decide(binary) } == .remote, "not text")
        let unread = MergeVersions(localSize: 10, remoteSize: 4, localModified: 1, remoteModified: 2)
        #expect(MergeChain([.json, .maximum(pointer("/a")), .larger]).decide { $0.decide(unread) } == .local)
        // A failed command (the caller's answer) falls through too.
        let afterCommand = MergeChain([.command("x", timeoutSeconds: nil), .local]).decide { step in
            if case .command = step { return .fallThrough("the merge command x did not merge: exit 3") }
            return step.decide(unread)
        }
        #expect(afterCommand == .local)
    }

    @Test func whenEveryStepFallsThroughBothAreKeptWithTheReasons() {
        let tie = versions(base: #"{"s":1,"t":0}"#, local: #"{"s":2.0,"t":1}"#, remote: #"{"s":2e0,"t":2}"#)
        #expect(
            walk("merge=json else prefer=max(json:/s) else prefer=larger", tie)
                == .keepBoth(
                    reason:
                        "both changed the same JSON keys (or a version is not valid JSON); both versions have the same number at \"/s\"; both versions have the same size (15 bytes)"
                ))
        #expect(
            walk("merge=json else merge=keep-both", tie)
                == .keepBoth(reason: "both changed the same JSON keys (or a version is not valid JSON)"))
        #expect(walk("merge=keep-both", tie) == .keepBoth(reason: "both changed the content (policy keep-both)"))
        #expect(
            walk("prefer=smaller", versions(local: "ab", remote: "cd"))
                == .keepBoth(reason: "both versions have the same size (2 bytes)"))
    }

    @Test func aCallerAnswerStopsTheWalk() {
        var asked: [MergePolicy] = []
        let outcome = MergeChain([.larger, .command("x", timeoutSeconds: nil), .local]).decide { step in
            asked.append(step)
            if case .command = step { return nil }
            return .fallThrough("tie")
        }
        #expect(outcome == nil)
        #expect(asked == [.larger, .command("x", timeoutSeconds: nil)])
    }
}
