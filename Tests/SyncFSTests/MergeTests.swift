import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// Merges end to end, in process: two folders edit the same file while neither uploads, then A
/// commits first and B (refused) resolves by the file's policy. In the serialized engine suite
/// (see `SyncFaultTests` for why).
extension SyncEngineTests {
    static let holdUploads = UploadQueue.Policy(
        quietDelay: 60_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)

    /// `path` (in the root) holds `base` on both sides; then A writes `onA` and B writes `onB`
    /// (whole-file rewrites, unless nil); A commits, then B. Returns when both queues drained.
    func editOnBothSides(
        _ pair: SyncedPair, _ path: String, base: String, onA: String?, onB: String?,
        changeA: ((FileSystemFixture) throws -> Void)? = nil, changeB: ((FileSystemFixture) throws -> Void)? = nil
    ) async throws {
        try pair.a.makeFile(path, contents: bytes(base))
        pair.a.fs.outbox.expediteAll()
        try await eventually("\(path) on B") { try contents(pair.b, path) == bytes(base) }
        try await pair.settle()
        if let onA { try rewrite(pair.a, path, onA) }
        try changeA?(pair.a)
        if let onB { try rewrite(pair.b, path, onB) }
        try changeB?(pair.b)
        pair.a.fs.outbox.expediteAll()
        try await eventually("A committed") {
            pair.a.fs.outbox.items.isEmpty && pair.a.fs.outbox.inFlightCount == 0
        }
        try await eventually("both outboxes drain") {
            // Changes the resolution queued (a conflict copy, say) wait for the long delay otherwise.
            pair.a.fs.outbox.expediteAll()
            pair.b.fs.outbox.expediteAll()
            return pair.a.fs.outbox.items.isEmpty && pair.b.fs.outbox.items.isEmpty
                && pair.a.fs.outbox.inFlightCount == 0 && pair.b.fs.outbox.inFlightCount == 0
        }
    }

    func rewrite(_ fixture: FileSystemFixture, _ path: String, _ text: String) throws {
        let handle = try fixture.fs.open(try fixture.lookupIno(path), flags: O_RDWR | O_TRUNC, caller: testCaller)
        try fixture.write(handle, bytes(text), at: 0)
        fixture.fs.fileIO.release(handle)
    }

    /// Waits until both roots list the same names and every file has the same bytes; returns them.
    func converged(_ pair: SyncedPair) async throws -> [String: String] {
        var tree: [String: String] = [:]
        try await eventually("A and B converge") {
            // Changes the resolution queued (a conflict copy, say) wait for the long delay otherwise.
            pair.a.fs.outbox.expediteAll()
            pair.b.fs.outbox.expediteAll()
            let namesA = try pair.a.childNames()
            guard namesA == (try pair.b.childNames()) else { return false }
            var files: [String: String] = [:]
            for name in namesA {
                let onA = try contents(pair.a, name)
                guard onA == (try contents(pair.b, name)) else { return false }
                files[name] = String(decoding: onA, as: UTF8.self)
            }
            tree = files
            return pair.a.fs.outbox.items.isEmpty && pair.b.fs.outbox.items.isEmpty
        }
        return tree
    }

    func state(_ fixture: FileSystemFixture, _ path: String) throws -> String {
        String(
            decoding: try fixture.fs.xattrs.get(try fixture.lookupIno(path), name: "user.syncfs.state"), as: UTF8.self)
    }

    func setRules(_ pair: SyncedPair, _ text: String) async throws {
        try pair.a.makeFile(".syncfs-rules", contents: bytes(text))
        pair.a.fs.outbox.expediteAll()
        try await eventually("rules on B") { try contents(pair.b, ".syncfs-rules") == bytes(text) }
    }

    @Test func editsToDifferentLinesOfATextFileMerge() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await editOnBothSides(
            pair, "notes.txt", base: "one\ntwo\nthree\nfour\nfive\n", onA: "ONE\ntwo\nthree\nfour\nfive\n",
            onB: "one\ntwo\nthree\nfour\nFIVE\n")
        let tree = try await converged(pair)
        #expect(tree == ["notes.txt": "ONE\ntwo\nthree\nfour\nFIVE\n"], "merged, no conflict copy")
        #expect(try state(pair.a, "notes.txt") == "local")
        #expect(try state(pair.b, "notes.txt") == "local")
        #expect(pair.a.fs.conflictsView.unresolved().isEmpty && pair.b.fs.conflictsView.unresolved().isEmpty)
    }

    @Test func overlappingEditsKeepBothAndTheConflictIsVisibleUntilResolved() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await editOnBothSides(pair, "notes.txt", base: "same line\n", onA: "A's line\n", onB: "B's line\n")
        let tree = try await converged(pair)
        #expect(tree["notes.txt"] == "A's line\n", "the file keeps the version committed first")
        // The copy is kept on B and names B's device, not A's (two mounts on one machine differ).
        #expect(pair.a.fs.deviceName != pair.b.fs.deviceName)
        let copies = tree.keys.filter { $0.hasPrefix("notes (conflict from \(pair.b.fs.deviceName) ") }
        try #require(copies.count == 1 && tree.count == 2, "\(tree.keys.sorted())")
        let copy = copies[0]
        #expect(copy.hasSuffix(").txt"))
        #expect(tree[copy] == "B's line\n", "B's version is kept beside it")
        #expect(!tree.values.contains { $0.contains("<<<<<<<") }, "no conflict markers unless asked")
        for fixture in [pair.a, pair.b] {
            try await eventually("conflict state on both copies") {
                try state(fixture, "notes.txt") == "conflict" && state(fixture, copy) == "conflict"
            }
            let listed = fixture.fs.conflictsView.unresolved()
            #expect(listed.map(\.path) == [copy])
            #expect(listed.first?.originalPath == "notes.txt")
            #expect(fixture.fs.conflictsView.unresolvedCount() == 1)
        }
        let note = try pair.a.fs.xattrs.get(try pair.a.lookupIno(copy), name: "user.syncfs.conflict")
        #expect(
            String(decoding: note, as: UTF8.self).contains(pair.a.fileID(of: try pair.a.lookupIno("notes.txt"))!.hex))
        #expect(!(try pair.a.fs.xattrs.list(try pair.a.lookupIno(copy))).contains("user.syncfs.conflict"))
        // Resolving on A clears it on both.
        #expect(try pair.a.fs.conflictsView.resolve(try pair.a.lookupIno("notes.txt")) == 1)
        try await eventually("resolved on B too") {
            pair.a.fs.outbox.expediteAll()
            return try pair.b.fs.conflictsView.unresolved().isEmpty && state(pair.b, copy) == "local"
        }
        #expect(try state(pair.a, "notes.txt") == "local")
        #expect(try pair.a.childNames().count == 2, "resolving keeps both files")
    }

    @Test func jsonSettingsMergeKeyByKey() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await editOnBothSides(
            pair, "settings.json", base: "{\n  \"theme\": \"dark\",\n  \"size\": 12\n}\n",
            onA: "{\n  \"theme\": \"light\",\n  \"size\": 12\n}\n",
            onB: "{\n  \"theme\": \"dark\",\n  \"size\": 14,\n  \"wrap\": true\n}\n")
        let tree = try await converged(pair)
        try #require(tree.count == 1, "\(tree.keys.sorted())")
        let merged = try JSONSerialization.jsonObject(with: Data(tree["settings.json"]!.utf8)) as? [String: Any]
        #expect(merged?["theme"] as? String == "light")
        #expect(merged?["size"] as? Int == 14)
        #expect(merged?["wrap"] as? Bool == true)
    }

    @Test func aRuleCanPreferTheNewestVersion() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await setRules(pair, "# saves: the newest wins\n*.sav prefer=newest\n")
        try await editOnBothSides(
            pair, "game.sav", base: "level 1", onA: "level 5", onB: nil,
            changeB: { fixture in
                // B's save is newer (its mtime is a minute later than A's).
                try self.rewrite(fixture, "game.sav", "level 3")
                var changes = AttributeChanges()
                changes.mtime = .at(Clock.nowNanoseconds() + 60_000_000_000)
                _ = try fixture.fs.setattr(try fixture.lookupIno("game.sav"), changes, handle: nil)
            })
        let tree = try await converged(pair)
        #expect(tree.keys.sorted() == [".syncfs-rules", "game.sav"], "no copy: the rule chose one side")
        #expect(tree["game.sav"] == "level 3")
    }

    @Test func aRenameOnOneSideAndAnEditOnTheOtherBothApply() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await editOnBothSides(
            pair, "draft.txt", base: "text\n", onA: nil, onB: "text, edited on B\n",
            changeA: { fixture in
                try fixture.fs.rename(
                    parent: .root, name: FileName("draft.txt"), newParent: .root, newName: FileName("final.txt"),
                    flags: [])
            })
        let tree = try await converged(pair)
        #expect(tree == ["final.txt": "text, edited on B\n"])
    }

    @Test func anEditSurvivesADeleteOnTheOtherSide() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await editOnBothSides(
            pair, "keep.txt", base: "v1\n", onA: nil, onB: "v2 from B\n",
            changeA: { fixture in try fixture.fs.unlink(parent: .root, name: FileName("keep.txt")) })
        let tree = try await converged(pair)
        #expect(tree == ["keep.txt": "v2 from B\n"])
    }

    @Test func aChmodOnOneSideAndAnEditOnTheOtherBothApply() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await editOnBothSides(
            pair, "script.sh", base: "echo 1\n", onA: "echo 2\n", onB: nil,
            changeB: { fixture in
                var changes = AttributeChanges()
                changes.mode = 0o755
                _ = try fixture.fs.setattr(try fixture.lookupIno("script.sh"), changes, handle: nil)
            })
        let tree = try await converged(pair)
        #expect(tree == ["script.sh": "echo 2\n"])
        for fixture in [pair.a, pair.b] {
            try await eventually("mode 755") {
                try fixture.fs.getattr(try fixture.lookupIno("script.sh")).mode & 0o7777 == 0o755
            }
        }
    }

    /// A private directory (0700) holding a `merge-commands` file with `text`; removed by the caller.
    func localMergeCommands(_ text: String) throws -> (directory: String, commands: LocalMergeCommands) {
        let directory = try makeTemporaryDirectory("syncfs-merge-test")
        let file = directory + "/merge-commands"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        return (directory, LocalMergeCommands(path: file, mountpoint: nil))
    }

    @Test func theMachinesMergeCommandMergesAndItsFailureKeepsBoth() async throws {
        let local = try localMergeCommands(
            """
            # name      command
            sort-both   sort -u %A %B -o %A
            fail        exit 3
            path        printf %s %P > %A
            """)
        defer { try? FileManager.default.removeItem(atPath: local.directory) }
        let pair = try SyncedPair(policy: Self.holdUploads, mergeCommands: local.commands)
        try await setRules(
            pair,
            """
            *.list merge=command:sort-both
            *.fail merge=command:fail timeout=5
            *.p merge=command:path
            """)
        try await editOnBothSides(pair, "a.list", base: "b\n", onA: "b\nc\n", onB: "a\nb\n")
        try await editOnBothSides(pair, "x.fail", base: "1\n", onA: "2\n", onB: "3\n")
        // A hostile name reaches the command as one quoted word: nothing in it is executed.
        let hostile = "$(touch pwned)`touch pwned2`;touch pwned3 '\"x.p"
        try await editOnBothSides(pair, hostile, base: "1\n", onA: "2\n", onB: "3\n")
        let tree = try await converged(pair)
        #expect(tree["a.list"] == "a\nb\nc\n", "the command's result in %A")
        #expect(tree["x.fail"] == "2\n")
        #expect(
            tree.keys.contains { $0.hasPrefix("x (conflict from ") && $0.hasSuffix(").fail") }, "\(tree.keys.sorted())")
        #expect(tree[hostile] == hostile, "%P arrived as the literal name")
    }

    /// A synced rule naming a command this machine does not define (or a whole command
    /// line, as rules files of earlier versions did) runs nothing; both versions are kept, and
    /// the conflict copy's reason says why.
    @Test func aCommandTheMachineDoesNotDefineNeverRuns() async throws {
        let local = try localMergeCommands("sort-both sort -u %A %B -o %A\n")
        defer { try? FileManager.default.removeItem(atPath: local.directory) }
        let marker = local.directory + "/ran"
        let pair = try SyncedPair(policy: Self.holdUploads, mergeCommands: local.commands)
        try await setRules(
            pair,
            """
            *.list merge=command:touch \(marker); sort -u %A %B -o %A
            *.evil merge=command:evil
            """)
        try await editOnBothSides(pair, "a.list", base: "b\n", onA: "b\nc\n", onB: "a\nb\n")
        try await editOnBothSides(pair, "b.evil", base: "1\n", onA: "2\n", onB: "3\n")
        let tree = try await converged(pair)
        #expect(!FileManager.default.fileExists(atPath: marker), "the synced command line ran")
        #expect(tree["a.list"] == "b\nc\n" && tree["b.evil"] == "2\n", "the files took the container's version")
        let copies = tree.keys.filter { $0.contains(" (conflict from ") }
        #expect(copies.count == 2, "\(tree.keys.sorted())")
        for copy in copies {
            let note = String(
                decoding: try pair.b.fs.xattrs.get(try pair.b.lookupIno(copy), name: "user.syncfs.conflict"),
                as: UTF8.self)
            #expect(note.contains("is not allowed on this machine"), "\(note)")
            #expect(note.contains(copy.hasSuffix(".evil") ? "does not define it" : "must name a command"), "\(note)")
        }
    }

    /// A daemon without any local configuration runs no command at all.
    @Test func withoutLocalConfigurationNoCommandRuns() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await setRules(pair, "*.list merge=command:sort-both\n")
        try await editOnBothSides(pair, "a.list", base: "b\n", onA: "b\nc\n", onB: "a\nb\n")
        let tree = try await converged(pair)
        #expect(tree["a.list"] == "b\nc\n")
        #expect(tree.keys.contains { $0.hasPrefix("a (conflict from ") }, "\(tree.keys.sorted())")
    }

    @Test func conflictMarkersOnlyWhenTheRuleAsksForThem() async throws {
        let pair = try SyncedPair(policy: Self.holdUploads)
        try await setRules(pair, "*.md merge=text conflict=markers\n")
        try await editOnBothSides(pair, "doc.md", base: "title\nbody\n", onA: "title\nbody A\n", onB: "title\nbody B\n")
        let tree = try await converged(pair)
        #expect(tree.keys.sorted() == [".syncfs-rules", "doc.md"], "no copy")
        let text = tree["doc.md"] ?? ""
        #expect(text.hasPrefix("title\n<<<<<<< "), "\(text)")
        #expect(text.contains("body A\n") && text.contains("body B\n") && text.contains(">>>>>>> "))
        try await eventually("marked as a conflict on B") { try state(pair.b, "doc.md") == "conflict" }
    }
}
