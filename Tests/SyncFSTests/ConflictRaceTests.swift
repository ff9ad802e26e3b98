import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// Races of the conflict resolution the randomized convergence test
/// (`Tests/MountTests/ConvergenceTest.swift`) can reach, each made deterministic with one
/// container and two folders: each states an outcome the conflict resolution
/// (`Uploader+Conflicts.swift`) must reach.
extension SyncEngineTests {
    /// A and B both edit a file; A's upload conflicts, so A keeps its version as a conflicted copy
    /// and takes B's version (downloading it). A local write that lands while that download runs
    /// must not be lost: it is newer than the copy and than B's version.
    @Test func aLocalWriteDuringAConflictsDownloadIsKept() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        // A's quiet delay leaves B time to commit first even on a loaded machine (400 ms did not
        // always); A's uploads are expedited explicitly below, so it costs no time.
        let slow = UploadQueue.Policy(
            quietDelay: 3_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(container: base, viewOfA: faulty, policy: slow)
        try pair.a.makeFile("shared.txt", contents: bytes("base\n"))
        pair.a.fs.outbox.expediteAll()
        try await eventually("shared on B") { try contents(pair.b, "shared.txt") == bytes("base\n") }
        let id = try #require(pair.a.fileID(of: try pair.a.lookupIno("shared.txt")))

        // A edits (its upload waits for the quiet delay); B edits and commits first.
        let inoA = try pair.a.lookupIno("shared.txt")
        var handle = try pair.a.fs.open(inoA, flags: O_RDWR, caller: testCaller)
        try pair.a.write(handle, bytes("A1\n"), at: 5)
        pair.a.fs.fileIO.release(handle)
        handle = try pair.b.fs.open(try pair.b.lookupIno("shared.txt"), flags: O_RDWR, caller: testCaller)
        try pair.b.write(handle, bytes("B1\n"), at: 5)
        pair.b.fs.fileIO.release(handle)
        pair.b.fs.outbox.expediteAll()
        let deviceB = pair.b.fs.deviceIdentity
        try await eventually("B's edit committed") { try await base.entry(id)?.device == deviceB }
        #expect(try await base.entry(id)?.device == deviceB, "B's edit was committed first")

        // A uploads, conflicts, keeps its version as a copy and downloads B's: slowly.
        faulty.delay(.chunk, by: .milliseconds(1500))
        pair.a.fs.outbox.expediteAll()
        try await eventually("A downloads B's version") { faulty.callCount(.chunk) >= 1 }
        // Meanwhile a program on A appends to the file.
        let current = try pair.a.lookupIno("shared.txt")
        handle = try pair.a.fs.open(current, flags: O_RDWR, caller: testCaller)
        let size = try pair.a.fs.getattr(current).size
        try pair.a.write(handle, bytes("A2\n"), at: size)
        pair.a.fs.fileIO.release(handle)

        faulty.delay(.chunk, by: nil)
        // A taken remote version gives way to a local change made since the conflict was decided:
        // A's write is uploaded after its quiet delay, beside the copy of A1 and B's version.
        func texts() throws -> [String] {
            try pair.a.childNames().map { String(decoding: try contents(pair.a, $0), as: UTF8.self) }
        }
        try await eventually("both queues drain with A2, A1 and B1 on A (A has \((try? texts()) ?? []))") {
            let everything = try texts()
            return pair.a.fs.outbox.items.isEmpty && pair.a.fs.outbox.inFlightCount == 0
                && pair.b.fs.outbox.items.isEmpty && pair.b.fs.outbox.inFlightCount == 0
                && ["A2", "A1", "B1"].allSatisfy { tag in everything.contains { $0.contains(tag) } }
        }
        let names = try pair.a.childNames()
        let everything = try texts()
        // `takeRemote` must not install the container's version over a write made after the
        // conflict was decided and the copy made: that write is kept.
        #expect(
            everything.contains { $0.contains("A2") },
            "the write made during the conflict's download is gone; A has \(names): \(everything)")
        #expect(everything.contains { $0.contains("A1") } && everything.contains { $0.contains("B1") })
    }

    /// The kernel resolves a name to the inode it cached just before a remote edit gave the name
    /// a new inode (its cached name is dropped a moment after the change). Opening that old
    /// inode for writing must not succeed: the writes would land in an unlinked node, never be
    /// uploaded, and be lost without an error (and a read would find its content gone). ESTALE
    /// makes the kernel look the name up again.
    @Test func aWriteOpenOfAnInodeARemoteEditReplacedIsStale() async throws {
        let pair = try SyncedPair()
        let inoA = try pair.a.makeFile("note.txt", contents: bytes("one\n"))
        try await eventually("note on B") { try contents(pair.b, "note.txt") == bytes("one\n") }
        // Downloaded and finished (not a placeholder any more: its bytes are its own).
        try await eventually("note local on B") {
            try pair.b.fs.xattrs.get(try pair.b.lookupIno("note.txt"), name: "user.syncfs.state") == bytes("local")
        }
        let old = try pair.b.lookupIno("note.txt")
        let handle = try pair.a.fs.open(inoA, flags: O_RDWR, caller: testCaller)
        try pair.a.write(handle, bytes("two\n"), at: 4)
        pair.a.fs.fileIO.release(handle)
        try await eventually("the edit on B, under a new inode") { try pair.b.lookupIno("note.txt") != old }

        #expect(throws: FSError.stale) { try pair.b.fs.open(old, flags: O_WRONLY | O_APPEND, caller: testCaller) }
        #expect(throws: FSError.stale) { try pair.b.fs.open(old, flags: O_RDWR, caller: testCaller) }
        #expect(throws: FSError.stale) { try pair.b.fs.open(old, flags: O_RDONLY | O_TRUNC, caller: testCaller) }
        // A read-only open finds the old content gone (ESTALE), or, when the old node was still
        // a placeholder being downloaded (its download goes with it for its handles), that
        // content whole: never an empty or partial file.
        do throws(FSError) {
            let reader = try pair.b.fs.open(old, flags: O_RDONLY, caller: testCaller)
            defer { pair.b.fs.fileIO.release(reader) }
            try pair.b.fs.residency.ensureContent(reader, offset: 0, count: 4)
            #expect(readBytes(reader.descriptor, count: 16, at: 0) == bytes("one\n"))
        } catch {
            #expect(error == .stale)
        }
        // What the name leads to now opens, and a write there syncs.
        let fresh = try pair.b.fs.open(try pair.b.lookupIno("note.txt"), flags: O_RDWR, caller: testCaller)
        try pair.b.write(fresh, bytes("three\n"), at: 8)
        pair.b.fs.fileIO.release(fresh)
        try await eventually("B's write on A") { try contents(pair.a, "note.txt") == bytes("one\ntwo\nthree\n") }
    }

    /// B's upload of an edit is under way when A's delete of the file lands; then B deletes the
    /// file too. B's put conflicts with the tombstone, so B rebases onto it; its next round finds
    /// the file gone and commits a delete against the tombstone's version, which the container
    /// refuses as invalid (there is nothing to delete). The change must end (both sides deleted
    /// the file), not be retried forever with `sync` never finishing.
    @Test func aDeleteAfterAConflictWithARemoteDeleteEnds() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: faulty)
        try pair.a.makeFile("gone.txt", contents: bytes("base\n"))
        try await eventually("gone.txt on B") { try contents(pair.b, "gone.txt") == bytes("base\n") }
        try await pair.settle()
        let id = try #require(pair.a.fileID(of: try pair.a.lookupIno("gone.txt")))

        // B edits; its upload stalls sending the chunk.
        faulty.delay(.putChunk, by: .milliseconds(1500))
        let handle = try pair.b.fs.open(try pair.b.lookupIno("gone.txt"), flags: O_RDWR, caller: testCaller)
        try pair.b.write(handle, bytes("B\n"), at: 5)
        pair.b.fs.fileIO.release(handle)
        pair.b.fs.outbox.expediteAll()
        try await eventually("B's upload started") { faulty.callCount(.putChunk) >= 1 }
        // A deletes the file, and then B does too, while B's upload still runs.
        try pair.a.fs.unlink(parent: .root, name: FileName("gone.txt"))
        pair.a.fs.outbox.expediteAll()
        try await eventually("A's delete committed") { try await base.entry(id)?.isDeleted == true }
        try pair.b.fs.unlink(parent: .root, name: FileName("gone.txt"))
        faulty.delay(.putChunk, by: nil)

        try await eventually("B's queue empties") {
            pair.b.fs.outbox.expediteAll()
            return pair.b.fs.outbox.items.isEmpty && pair.b.fs.outbox.inFlightCount == 0
        }
        let stuck = pair.b.fs.outbox.items.map { "\($0.fileID): \($0.lastError ?? "-") (\($0.attempts) attempts)" }
        #expect(stuck.isEmpty, "B's queue never empties: \(stuck)")
        #expect(try await base.entry(id)?.isDeleted == true)
        #expect(try pair.a.childNames() == [] && pair.b.childNames() == [])
    }

    /// A edits a file and removes an (empty) folder; meanwhile B edits the same file and moves it
    /// into that folder, and commits first. A's upload of the file conflicts: A keeps its version
    /// as a copy and must take B's, which lives in the folder A removed — a folder whose delete
    /// A still has queued, and which the container refuses (the folder is not empty) until the
    /// file is settled. Neither change may wait for the other forever; and each round of the
    /// wait must not leave another conflicted copy behind.
    @Test func aConflictIntoAFolderRemovedLocallyDoesNotLoop() async throws {
        // A's changes wait (3 s) while B commits first, even on a loaded machine.
        let slow = UploadQueue.Policy(
            quietDelay: 3_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: slow)
        try pair.a.mkdir("folder")
        try pair.a.makeFile("note.txt", contents: bytes("base\n"))
        pair.a.fs.outbox.expediteAll()
        try await eventually("both on B") { try contents(pair.b, "note.txt") == bytes("base\n") }
        try await pair.settle()

        // A: edit the file, remove the folder (both queued).
        var handle = try pair.a.fs.open(try pair.a.lookupIno("note.txt"), flags: O_RDWR, caller: testCaller)
        try pair.a.write(handle, bytes("A\n"), at: 5)
        pair.a.fs.fileIO.release(handle)
        try pair.a.fs.rmdir(parent: .root, name: FileName("folder"))
        // B: edit the file and move it into the folder; B commits first.
        handle = try pair.b.fs.open(try pair.b.lookupIno("note.txt"), flags: O_RDWR, caller: testCaller)
        try pair.b.write(handle, bytes("B\n"), at: 5)
        pair.b.fs.fileIO.release(handle)
        try pair.b.fs.rename(
            parent: .root, name: FileName("note.txt"), newParent: try pair.b.lookupIno("folder"),
            newName: FileName("note.txt"), flags: [])
        pair.b.fs.outbox.expediteAll()
        try await eventually("B's changes committed") {
            pair.b.fs.outbox.items.isEmpty && pair.b.fs.outbox.inFlightCount == 0
        }

        pair.a.fs.outbox.expediteAll()
        try await eventually("A's queue drains") {
            pair.a.fs.outbox.items.isEmpty && pair.a.fs.outbox.inFlightCount == 0
        }
        let queued = pair.a.fs.outbox.items.map { "\($0.fileID): \($0.lastError ?? "-") (\($0.attempts) attempts)" }
        let names = try pair.a.childNames()
        #expect(queued.isEmpty, "A's queue does not drain: \(queued)")
        #expect(names.filter { $0.contains("(conflict from ") }.count <= 1, "conflicted copies pile up: \(names)")
    }

    /// A removes an empty folder and renames another folder to its name; meanwhile B adds a file
    /// to the removed folder and commits first. A's rename needs the name the removed folder
    /// still holds in the container, and that folder's delete is refused (B's file is in it):
    /// the changes must still settle (the folder comes back with B's file, as SEMANTICS.md says,
    /// and the rename then gets its name or a conflicted one), not wait for each other forever.
    @Test func aRenameOntoAFolderWhoseDeleteIsRefusedSettles() async throws {
        // A's changes wait (3 s) while B commits first, even on a loaded machine.
        let slow = UploadQueue.Policy(
            quietDelay: 3_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: slow)
        try pair.a.mkdir("old")
        try pair.a.mkdir("other")
        pair.a.fs.outbox.expediteAll()
        try await eventually("both folders on B") { try pair.b.childNames() == ["old", "other"] }
        try await pair.settle()

        // A: remove "old", rename "other" to "old" (both queued).
        try pair.a.fs.rmdir(parent: .root, name: FileName("old"))
        try pair.a.fs.rename(
            parent: .root, name: FileName("other"), newParent: .root, newName: FileName("old"), flags: [])
        // B: a file in "old"; B commits first.
        try pair.b.makeFile("added.txt", in: try pair.b.lookupIno("old"), contents: bytes("B\n"))
        pair.b.fs.outbox.expediteAll()
        try await eventually("B's file committed") {
            pair.b.fs.outbox.items.isEmpty && pair.b.fs.outbox.inFlightCount == 0
        }

        pair.a.fs.outbox.expediteAll()
        try await eventually("A's queue drains") {
            pair.a.fs.outbox.items.isEmpty && pair.a.fs.outbox.inFlightCount == 0
        }
        let queued = pair.a.fs.outbox.items.map { "\($0.fileID): \($0.lastError ?? "-") (\($0.attempts) attempts)" }
        #expect(queued.isEmpty, "A's queue does not drain: \(queued)")
    }
}

extension SyncEngineTests {
    /// B changes only the mode of a file it holds as a placeholder; meanwhile A rewrites the file
    /// (longer) and then deletes it. B's commit meets the tombstone, so B re-creates the file (the
    /// edit survives the delete) on top of it. The placeholder's content is still the version B
    /// knew: the re-created entry must carry that content and its size, not the tombstone's
    /// manifest with B's older size (which the container refuses forever as inconsistent).
    @Test func aPlaceholdersMetadataEditAgainstADeleteRecreatesItConsistently() async throws {
        let hold = UploadQueue.Policy(
            quietDelay: 60_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: hold)
        let original = Array("eighteen bytes!!\n\n".utf8.prefix(18))
        try pair.a.makeFile("doc.txt", contents: original)
        pair.a.fs.outbox.expediteAll()
        try await eventually("doc.txt on B") { try pair.b.childNames() == ["doc.txt"] }
        var changes = AttributeChanges()
        changes.mode = 0o600
        _ = try pair.b.fs.setattr(try pair.b.lookupIno("doc.txt"), changes, handle: nil)

        let handle = try pair.a.fs.open(try pair.a.lookupIno("doc.txt"), flags: O_RDWR | O_TRUNC, caller: testCaller)
        try pair.a.write(handle, Array(repeating: UInt8(ascii: "x"), count: 45), at: 0)
        pair.a.fs.fileIO.release(handle)
        pair.a.fs.outbox.expediteAll()
        try await eventually("A's rewrite committed") { pair.a.fs.outbox.items.isEmpty }
        try pair.a.fs.unlink(parent: .root, name: FileName("doc.txt"))
        pair.a.fs.outbox.expediteAll()
        try await eventually("A's delete committed") { pair.a.fs.outbox.items.isEmpty }

        try await eventually("B's change goes through") {
            pair.b.fs.outbox.expediteAll()
            return pair.b.fs.outbox.items.isEmpty && pair.b.fs.outbox.inFlightCount == 0
        }
        try await eventually("the file is back on A with B's mode and the content B knew") {
            pair.a.fs.outbox.expediteAll()
            return try pair.a.childNames() == ["doc.txt"]
                && pair.a.fs.getattr(try pair.a.lookupIno("doc.txt")).mode & 0o7777 == 0o600
                && contents(pair.a, "doc.txt") == original
        }
    }
}

extension SyncEngineTests {
    /// B moves folder d1 into folder d2; meanwhile A changes d1's mode and moves d2 into d1 (both
    /// queued). A's upload of d1 conflicts with B's move, and the merged entry (B's placement, A's
    /// mode) puts d1 into d2 — which, on A, is inside d1. Adopting that placement as it is made a
    /// cycle of the two folders, cut off from the root, until A's move of d2 gave way; every walk
    /// up the tree meanwhile never ended (seeds 0x8 and 0xc of the convergence test: the follower
    /// spun in `pathBytes` holding the namespace lock, or ran out of memory). The merge must wait
    /// for the cycle rule instead: B's move stays, A's move of d2 gives way, A's mode applies.
    @Test func aMergedMoveOfAFolderIntoItsOwnSubfolderMakesNoCycle() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        // Uploads wait until expedited, so the order of the commits is the test's.
        let hold = UploadQueue.Policy(
            quietDelay: 60_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(container: base, viewOfA: faulty, policy: hold)
        let d1 = try pair.a.mkdir("d1")
        let d2 = try pair.a.mkdir("d2")
        pair.a.fs.outbox.expediteAll()
        try await eventually("both folders on B") { try pair.b.childNames() == ["d1", "d2"] }
        try await pair.settle()

        // A: d1's mode, then d2 into d1 (both queued, d1 first).
        var changes = AttributeChanges()
        changes.mode = 0o700
        _ = try pair.a.fs.setattr(d1, changes, handle: nil)
        try pair.a.fs.rename(parent: .root, name: FileName("d2"), newParent: d1, newName: FileName("d2"), flags: [])
        // B: d1 into d2, committed first.
        try pair.b.fs.rename(
            parent: .root, name: FileName("d1"), newParent: try pair.b.lookupIno("d2"), newName: FileName("d1"),
            flags: [])
        pair.b.fs.outbox.expediteAll()
        try await eventually("B's move committed") {
            pair.b.fs.outbox.items.isEmpty && pair.b.fs.outbox.inFlightCount == 0
        }

        // A's commits are answered slowly, so its tree can be looked at between them.
        faulty.delay(.commit, by: .milliseconds(300))
        pair.a.fs.outbox.expediteAll()
        var cycle = false
        try await eventually("A's commits answered, or a cycle") {
            cycle = !reachesRoot(pair.a, d1) || !reachesRoot(pair.a, d2)
            return cycle || (pair.a.fs.outbox.items.isEmpty && pair.a.fs.outbox.inFlightCount == 0)
        }
        #expect(!cycle, "A's folders d1 and d2 became each other's parent")
        guard !cycle else { return }
        faulty.delay(.commit, by: nil)

        for (side, fixture) in [("A", pair.a), ("B", pair.b)] {
            try await eventually("\(side) has d2/d1, with A's mode") {
                pair.a.fs.outbox.expediteAll()
                let outer = try fixture.lookupIno("d2")
                let inner = try fixture.lookupIno("d1", in: outer)
                return try fixture.childNames() == ["d2"] && fixture.childNames(of: outer) == ["d1"]
                    && fixture.childNames(of: inner) == [] && fixture.fs.getattr(inner).mode & 0o7777 == 0o700
            }
        }
        try await pair.settle()
    }
}

/// Whether the walk up from `ino` reaches the root (within 64 steps: a cycle never does).
private func reachesRoot(_ fixture: FileSystemFixture, _ ino: InodeNumber) -> Bool {
    fixture.fs.live.transact { tree in
        var current = tree.nodes[ino]
        for _ in 0..<64 {
            guard let node = current, !node.isUnlinked else { return false }
            if node.ino == .root { return true }
            current = node.parent.flatMap { tree.nodes[$0] }
        }
        return false
    }
}
