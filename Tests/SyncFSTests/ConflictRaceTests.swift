import Foundation
import Glibc
import SyncBackend
import Testing

@testable import SyncFS

/// Reductions of what the randomized convergence test (`Tests/MountTests/ConvergenceTest.swift`)
/// found: local changes made while the uploader resolves a conflict must survive it.
extension SyncEngineTests {
    /// A and B both edit a file; A's upload conflicts, so A keeps its version as a conflicted copy
    /// and takes B's version (downloading it). A local write that lands while that download runs
    /// must not be lost: it is newer than the copy and than B's version.
    @Test func aLocalWriteDuringAConflictsDownloadIsKept() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let slow = UploadQueue.Policy(quietDelay: 400_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(container: base, viewOfA: faulty, policy: slow)
        try pair.a.makeFile("shared.txt", contents: bytes("base\n"))
        pair.a.fs.outbox.expediteAll()
        try await pair.eventually("shared on B") { try contents(pair.b, "shared.txt") == bytes("base\n") }
        let id = try #require(pair.a.fileID(of: try pair.a.lookupIno("shared.txt")))

        // A edits (its upload waits for the quiet delay); B edits and commits first.
        let inoA = try pair.a.lookupIno("shared.txt")
        var handle = try pair.a.fs.open(inoA, flags: O_RDWR, caller: testCaller)
        try pair.a.write(handle, bytes("A1\n"), at: 5)
        pair.a.fs.release(handle)
        handle = try pair.b.fs.open(try pair.b.lookupIno("shared.txt"), flags: O_RDWR, caller: testCaller)
        try pair.b.write(handle, bytes("B1\n"), at: 5)
        pair.b.fs.release(handle)
        pair.b.fs.outbox.expediteAll()
        let deviceB = pair.b.fs.deviceID
        let deadline = ContinuousClock.now + .seconds(20)
        while try await base.entry(id)?.device != deviceB && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await base.entry(id)?.device == deviceB, "B's edit was committed first")

        // A uploads, conflicts, keeps its version as a copy and downloads B's: slowly.
        faulty.delay(.chunk, by: .milliseconds(1500))
        pair.a.fs.outbox.expediteAll()
        try await pair.eventually("A downloads B's version") { faulty.callCount(.chunk) >= 1 }
        // Meanwhile a program on A appends to the file.
        let current = try pair.a.lookupIno("shared.txt")
        handle = try pair.a.fs.open(current, flags: O_RDWR, caller: testCaller)
        let size = try pair.a.fs.getattr(current).size
        try pair.a.write(handle, bytes("A2\n"), at: size)
        pair.a.fs.release(handle)

        faulty.delay(.chunk, by: nil)
        try await Task.sleep(for: .milliseconds(2000))
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        try await Task.sleep(for: .milliseconds(500))
        let names = try pair.a.childNames()
        let everything = try names.map { String(decoding: try contents(pair.a, $0), as: UTF8.self) }
        // Known bug (reported with issue #5's merge work, where the conflict resolution is being
        // rewritten): `takeRemote` applies the container's version with `force`, which drops the
        // outbox item and installs the remote content without checking that the file is unchanged
        // since the conflict was decided and the copy made.
        withKnownIssue("a local write during a conflict's download is lost (SyncEngine.takeRemote, force apply)") {
            #expect(
                everything.contains { $0.contains("A2") },
                "the write made during the conflict's download is gone; A has \(names): \(everything)")
        }
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
        try await pair.eventually("note on B") { try contents(pair.b, "note.txt") == bytes("one\n") }
        let old = try pair.b.lookupIno("note.txt")
        let handle = try pair.a.fs.open(inoA, flags: O_RDWR, caller: testCaller)
        try pair.a.write(handle, bytes("two\n"), at: 4)
        pair.a.fs.release(handle)
        try await pair.eventually("the edit on B, under a new inode") { try pair.b.lookupIno("note.txt") != old }

        #expect(throws: FSError.stale) { try pair.b.fs.open(old, flags: O_WRONLY | O_APPEND, caller: testCaller) }
        #expect(throws: FSError.stale) { try pair.b.fs.open(old, flags: O_RDWR, caller: testCaller) }
        #expect(throws: FSError.stale) { try pair.b.fs.open(old, flags: O_RDONLY | O_TRUNC, caller: testCaller) }
        // Its old content went with the change: a read would find an empty file.
        #expect(throws: FSError.stale) { try pair.b.fs.open(old, flags: O_RDONLY, caller: testCaller) }
        // What the name leads to now opens, and a write there syncs.
        let fresh = try pair.b.fs.open(try pair.b.lookupIno("note.txt"), flags: O_RDWR, caller: testCaller)
        try pair.b.write(fresh, bytes("three\n"), at: 8)
        pair.b.fs.release(fresh)
        try await pair.eventually("B's write on A") { try contents(pair.a, "note.txt") == bytes("one\ntwo\nthree\n") }
    }
}
