import Foundation
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// Waiting is not failing (doc/SEMANTICS.md, "Failures, outages and restarts"): the engine's
/// status shows an unreachable or busy container once, as the mount's state, and lists as
/// failing only the changes the container really refused. In the serialized engine suite (see
/// `SyncFaultTests.swift`).
extension SyncEngineTests {
    @Test func aBusyContainerKeepsTheMountOnlineAndItsChangesWaiting() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: faulty)
        faulty.startOutage(error: .busy("overloaded"))
        try pair.a.makeFile("busy.txt", contents: Array("queued".utf8))
        try await eventually("the upload was tried") { pair.a.fs.outbox.items.first?.attempts ?? 0 >= 1 }
        let busy = pair.engineA.status()
        #expect(busy.online && busy.offlineSince == nil, "a busy container answered: it is there")
        #expect(busy.failing.isEmpty, "busy is waiting, not failing: \(busy.failing.map(\.reason))")
        #expect(busy.changesWaiting == 1 && busy.upToDate == false)
        faulty.endOutage()
        pair.a.fs.outbox.expediteAll()
        try await eventually("on B") { try pair.b.childNames() == ["busy.txt"] }
        try await pair.settle()
        try await eventually("up to date") { pair.engineA.status().upToDate == true }
    }

    @Test func theMountIsOnlineAgainAtTheFirstAnswerAfterAnOutage() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: faulty)
        faulty.startOutage()
        try pair.a.makeFile("offline.txt", contents: Array("queued".utf8))
        try await eventually("offline") { !pair.engineA.status().online }
        let since = try #require(pair.engineA.status().offlineSince)
        #expect(ISO8601DateFormatter().date(from: since) != nil, "RFC 3339: \(since)")
        faulty.endOutage()
        try await eventually("online again") { pair.engineA.status().online }
        #expect(pair.engineA.status().offlineSince == nil)
        try await pair.settle()
    }

    @Test func aRealRefusalIsStillListedAsFailing() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: faulty)
        faulty.startOutage([.commit], error: .storageFailure("disk full"))
        try pair.a.makeFile("refused.txt", contents: Array("x".utf8))
        try await eventually("listed as failing") { !pair.engineA.status().failing.isEmpty }
        let status = pair.engineA.status()
        #expect(status.online, "a storage failure is an answer")
        #expect(status.failing.first?.reason.contains("disk full") == true)
        faulty.endOutage()
        pair.a.fs.outbox.expediteAll()
        try await eventually("failing cleared") { pair.engineA.status().failing.isEmpty }
        try await pair.settle()
    }
}
