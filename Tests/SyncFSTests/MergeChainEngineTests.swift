import Foundation
import Glibc
import TestSupport
import Testing

@testable import SyncFS

/// Rule chains carried out by the engine: a real edit on two folders that the first policy
/// cannot merge is decided by the next (see `MergeTests.swift` for the harness).
extension SyncEngineTests {
    @Test func aChainDecidesWhatItsFirstPolicyCannotMerge() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await setRules(pair, "*.sav merge=json else prefer=max(json:/score)\n")
        let base = #"{"score": 10, "level": 1}"#
        // Both changed both keys: the JSON merge conflicts. B resolves (A commits first).
        try await editOnBothSides(
            pair, "b-wins.sav", base: base, onA: #"{"score": 25, "level": 2}"#, onB: #"{"score": 40, "level": 3}"#)
        try await editOnBothSides(
            pair, "a-wins.sav", base: base, onA: #"{"score": 1e3, "level": 2}"#, onB: #"{"score": 999, "level": 3}"#)
        // Equal scores (however written) fall through to the end of the chain: both are kept.
        try await editOnBothSides(
            pair, "tie.sav", base: base, onA: #"{"score": 7, "level": 2}"#, onB: #"{"score": 7.0, "level": 3}"#)
        let tree = try await converged(pair)
        #expect(tree["b-wins.sav"] == #"{"score": 40, "level": 3}"#, "the local (B) version has the higher score")
        #expect(tree["a-wins.sav"] == #"{"score": 1e3, "level": 2}"#, "the remote (A) version has the higher score")
        #expect(tree["tie.sav"] == #"{"score": 7, "level": 2}"#, "a tie keeps both: the file takes A's")
        let copies = tree.keys.filter { $0.contains(" (conflict from ") }
        try #require(copies.count == 1 && copies[0].hasPrefix("tie (conflict from "), "\(tree.keys.sorted())")
        #expect(tree[copies[0]] == #"{"score": 7.0, "level": 3}"#)
        let note = try JSONDecoder().decode(
            ConflictNote.self,
            from: Data(try pair.b.fs.xattrs.get(try pair.b.lookupIno(copies[0]), name: ConflictNote.attribute)))
        #expect(
            note.reason
                == #"both changed the same JSON keys (or a version is not valid JSON); both versions have the same number at "/score""#,
            "every step's reason, in order")
    }

    /// A merge command in a chain runs on the merge worker; when it fails, the next policy
    /// decides; when a policy before it falls through, the command's result is the merge.
    @Test func aFailedMergeCommandFallsThroughToTheNextPolicy() async throws {
        let local = try localMergeCommands("fail exit 3\nsort-both sort -u %A %B -o %A\n")
        defer { try? FileManager.default.removeItem(atPath: local.directory) }
        let pair = try SyncedPair(policy: Self.holdUploads, mergeCommands: local.commands)
        try await setRules(
            pair,
            """
            *.fail merge=command:fail timeout=5 else prefer=local
            *.list merge=text else merge=command:sort-both else prefer=remote
            """)
        try await editOnBothSides(pair, "x.fail", base: "1\n", onA: "2\n", onB: "3\n")
        try await editOnBothSides(pair, "a.list", base: "b\n", onA: "c\n", onB: "a\n")
        let tree = try await converged(pair)
        #expect(tree["x.fail"] == "3\n", "the command failed: prefer=local took B's version")
        #expect(tree["a.list"] == "a\nc\n", "the lines conflicted: the command merged")
        #expect(tree.keys.sorted() == [".syncfs-rules", "a.list", "x.fail"], "no conflict copy")
    }
}
