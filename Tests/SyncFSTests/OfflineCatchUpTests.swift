import Foundation
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// Catching up after an outage (doc/SEMANTICS.md, "Offline"). In the serialized engine suite.
extension SyncEngineTests {
    /// Changes that failed only because the container was unreachable go as soon as it answers
    /// again, not after their backoff (here 60 s, as after a few minutes offline).
    @Test func changesQueuedDuringAnOutageGoSoonAfterItEndsWithoutASync() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let longBackoff = UploadQueue.Policy(
            quietDelay: 5_000_000, initialBackoff: 60_000_000_000, maximumBackoff: 300_000_000_000)
        let pair = try SyncedPair(container: base, viewOfA: faulty, policy: longBackoff)
        faulty.startOutage()
        try pair.a.makeFile("written-offline.txt", contents: Array("queued".utf8))
        try await eventually("the upload failed once") {
            pair.a.fs.outbox.items.first?.attempts ?? 0 >= 1
        }
        // Waiting for the container is not failing (doc/SEMANTICS.md, "Failures, outages and restarts").
        let waiting = pair.engineA.status()
        #expect(waiting.failing.isEmpty && waiting.changesWaiting == 1 && !waiting.online && waiting.upToDate == false)
        faulty.endOutage()
        let ended = ContinuousClock.now
        try await eventually("the file on B") { try pair.b.childNames() == ["written-offline.txt"] }
        let elapsed = ContinuousClock.now - ended
        #expect(elapsed < .seconds(10), "took \(elapsed) after the outage ended")
        #expect(try contents(pair.b, "written-offline.txt") == Array("queued".utf8))
        try await pair.settle()
    }
}
