import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// The follower and a pause (doc/SEMANTICS.md, "Pausing a mount"): a pause that arrives while
/// a batch of the feed is applied stops the follower after that batch — it neither claims to be
/// caught up nor waits on the feed (nor retries, nor checks the tree) until `resume`.
@Suite struct PausedFollowerTests {
    @Test func aPauseDuringABatchStopsTheFollowerAfterIt() async throws {
        let container = InMemoryContainer()
        let view = PausingView(base: container)
        let pair = try SyncedPair(container: container, viewOfB: view)
        let engineB = pair.engineB
        view.onEntries.withLock { $0 = { engineB.pause.pause(PauseState(until: nil, scope: .sync)) } }
        _ = try pair.a.makeFile("a.txt", contents: Array("a".utf8))
        try await eventually("B applied the batch, then sleeps in the pause") {
            let applied = try pair.b.childNames() == ["a.txt"]
            return applied && view.pausedDuringBatch.load(ordering: .acquiring) && engineB.pause.sleepingThreads >= 1
        }
        try await eventually("not caught up while paused") { !engineB.progress.feedCaughtUp }
        #expect(view.waitsWhilePaused.load(ordering: .acquiring) == 0, "the paused follower waited on the feed")
        #expect(!engineB.progress.feedCaughtUp)
        engineB.pause.resume()
        try await eventually("caught up after resume") { engineB.progress.feedCaughtUp }
    }
}

/// Forwards every call to `base`; runs `onEntries` (once) while the first batch with entries is
/// read, and counts the waits on the feed after it.
private final class PausingView: ForwardingTestContainer {
    let base: InMemoryContainer
    let onEntries = Mutex<(@Sendable () -> Void)?>(nil)
    let pausedDuringBatch = Atomic(false)
    let waitsWhilePaused = Atomic(0)

    init(base: InMemoryContainer) { self.base = base }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let batch = try await base.changes(after: cursor, limit: limit)
        let hook =
            batch.entries.isEmpty
            ? nil
            : onEntries.withLock { hook in
                defer { hook = nil }
                return hook
            }
        if let hook {
            hook()
            pausedDuringBatch.store(true, ordering: .releasing)
        }
        return batch
    }

    func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool {
        if pausedDuringBatch.load(ordering: .acquiring) { waitsWhilePaused.add(1, ordering: .acquiringAndReleasing) }
        return try await base.waitForChanges(after: cursor, timeout: timeout)
    }
}
