import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// An idle mount is quiet: no database writes, no polling loops (doc/performance-log.md, "An idle
/// mount").
@Suite struct IdleMountTests {
    @Test func aFollowerWaitingOnAnUnchangedFeedWritesNothing() async throws {
        let fixture = try FileSystemFixture()
        let container = FaultInjectingContainer(InMemoryContainer())
        var options = SyncEngine.Options()
        options.feedWait = .milliseconds(20)
        let engine = SyncEngine(
            fileSystem: fixture.fs, container: container, options: options, logger: .init(label: "t"))
        engine.start()
        defer { engine.stop() }
        try fixture.makeFile("a", contents: Array("x".utf8))
        try await eventually("the file is uploaded and the follower waits again") {
            fixture.fs.outbox.items.isEmpty && fixture.fs.outbox.inFlightCount == 0
                && container.callCount(.waitForChanges) >= 2
        }
        try fixture.fs.store.commit(durable: true)
        let written = fixture.fs.store.transactionsWritten.load(ordering: .relaxed)
        let waits = container.callCount(.waitForChanges)
        try await eventually("ten more rounds of waiting on the feed") {
            container.callCount(.waitForChanges) >= waits + 10
        }
        try fixture.fs.store.commit(durable: false)
        #expect(fixture.fs.store.transactionsWritten.load(ordering: .relaxed) == written)
    }

    @Test func contentActivityWakesTheKeeperAndIsNotLost() throws {
        let activity = ContentActivity()
        #expect(!activity.waitForActivity(timeout: .milliseconds(10)))
        activity.note()
        activity.note()
        #expect(activity.waitForActivity(timeout: .seconds(30)))
        #expect(!activity.waitForActivity(timeout: .milliseconds(10)))
        let woke = Thread.detachNewThreadWithResult { activity.waitForActivity(timeout: .seconds(60)) }
        usleep(50_000)  // scenario: the note should find the thread waiting
        activity.note()
        #expect(try woke.value(within: .seconds(30)))
    }

    @Test func aStopSignalEndsASleepAtOnce() throws {
        let signal = StopSignal()
        #expect(signal.sleep(for: .milliseconds(5)))
        let slept = Thread.detachNewThreadWithResult { signal.sleep(for: .seconds(60)) }
        usleep(50_000)  // scenario: the stop should find the thread asleep
        signal.stop()
        #expect(try slept.value(within: .seconds(30)) == false)
        #expect(!signal.sleep(for: .seconds(60)))
    }
}
