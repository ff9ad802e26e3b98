import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// Faults: outages, lost answers, partial writes, corrupt chunks. In the same (serialized) suite as
/// the other engine tests: stopping an engine blocks the calling thread until its threads end,
/// and those may wait for Swift's cooperative threads (two here), so pairs are never torn down
/// in parallel.
extension SyncEngineTests {
    @Test func anOutageQueuesChangesAndTheyDrainWhenTheContainerComesBack() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: faulty)
        faulty.startOutage()
        try pair.a.makeFile("during-outage.txt", contents: Array("queued".utf8))
        try pair.a.mkdir("folder")
        try await eventually("A's status shows the outage") {
            let status = pair.engineA.status()
            return status.lastContainerError != nil && !status.online
        }
        #expect(try pair.b.childNames() == [], "nothing can reach the container")
        #expect(pair.a.fs.outbox.items.count == 2, "nothing was dropped")
        let status = pair.engineA.status()
        #expect(status.lastContainerError != nil, "the outage is visible")
        #expect(!status.online && status.offlineSince != nil, "once, as the mount's state")
        #expect(status.failing.isEmpty, "not as a failing change per file: \(status.failing.map(\.reason))")
        #expect(status.changesWaiting == 2 && status.upToDate == false)
        faulty.endOutage()
        pair.a.fs.outbox.expediteAll()
        try await eventually("both on B") { try pair.b.childNames() == ["during-outage.txt", "folder"] }
        #expect(try contents(pair.b, "during-outage.txt") == Array("queued".utf8))
        try await pair.settle()
        #expect(pair.engineA.status().failing.isEmpty)
    }

    @Test func aLostCommitAnswerIsRecognisedAndNotDuplicated() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: faulty)
        faulty.loseNextCommitAnswers(3)
        try pair.a.makeFile("once.txt", contents: Array("exactly once".utf8))
        try await eventually("once.txt on B") { try contents(pair.b, "once.txt") == Array("exactly once".utf8) }
        try await pair.settle()
        #expect(try pair.a.childNames() == ["once.txt"], "no conflicted copy of our own commit")
        #expect(try pair.b.childNames() == ["once.txt"])
        let feed = try await base.changes(after: .beginning, limit: 100)
        #expect(feed.entries.filter { !$0.isDeleted }.count == 1, "one entry in the container")
    }

    @Test func aPartialChunkWriteIsRetriedAndNeverVisible() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: faulty)
        faulty.failNextPutChunksAsPartialWrites(2)
        let data = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        try pair.a.makeFile("big.bin", contents: data)
        try await eventually("big.bin on B") { try contents(pair.b, "big.bin") == data }
    }

    @Test func aCorruptChunkIsDetectedAndNeverInstalled() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        // Here B reads through the faulty view: its downloads get corrupted payloads.
        let pair = try SyncedPair(container: base, viewOfA: base, viewOfB: faulty)
        faulty.corruptNextChunkPayloads(2)
        let text = Array(String(repeating: "verified ", count: 5_000).utf8)
        try pair.a.makeFile("checked.txt", contents: text)
        try await eventually("checked.txt on B, intact") { try contents(pair.b, "checked.txt") == text }
        #expect(faulty.callCount(.chunk) >= 3, "the corrupt downloads were retried")
    }
}
