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
        #expect(
            everything.contains { $0.contains("A2") },
            "the write made during the conflict's download is gone; A has \(names): \(everything)")
        #expect(everything.contains { $0.contains("A1") } && everything.contains { $0.contains("B1") })
    }
}
