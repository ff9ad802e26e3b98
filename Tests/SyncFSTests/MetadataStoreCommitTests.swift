import Foundation
import SQLiteSupport
import SyncBackend
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// What an `afterCommit` action saw when it ran.
final class ActionLog: Sendable {
    private let state = Mutex<[String]>([])
    func append(_ item: String) { state.withLock { $0.append(item) } }
    var items: [String] { state.withLock { $0 } }
}

/// Whether the committed database (read through a connection of its own) holds entry `ino`.
func committedEntryExists(_ path: String, _ ino: UInt64) -> Bool {
    guard let connection = try? SQLiteConnection(path: path),
        let statement = try? connection.statement("SELECT COUNT(*) FROM entries WHERE ino = ?")
    else { return false }
    statement.bind(1, Int64(ino))
    guard (try? statement.step()) == true else { return false }
    let count = statement.int64(0)
    statement.reset()
    return count == 1
}

/// A flusher delay long enough that the flusher does not commit while a test looks, kept under
/// one second: the store ignores the whole-seconds part of `batchDelay` (see
/// `batchDelayOfWholeSecondsIsHonoured`), and this value must work before and after that fix.
let slowBatchDelay = Duration.milliseconds(900)

@Suite("MetadataStore: afterCommit and failed commits")
struct MetadataStoreCommitTests {
    @Test func afterCommitRunsOnlyOnceTheEarlierChangesAreCommitted() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        // The flusher waits `slowBatchDelay`, so nothing is committed behind the test's back meanwhile.
        let store = try MetadataStore(path: path, batchDelay: slowBatchDelay)
        defer { try? store.close() }
        let log = ActionLog()
        store.entryCreated(sampleRecord(2))
        store.afterCommit { log.append("first: entry committed = \(committedEntryExists(path, 2))") }
        store.entryCreated(sampleRecord(3))
        store.afterCommit { log.append("second: entry committed = \(committedEntryExists(path, 3))") }
        #expect(log.items.isEmpty, "no action runs before the commit")
        #expect(!committedEntryExists(path, 2))
        try store.commit(durable: false)
        #expect(log.items == ["first: entry committed = true", "second: entry committed = true"])
        try store.commit(durable: true)
        #expect(log.items.count == 2, "each action runs once")
    }

    @Test func afterCommitWithNothingPendingWaitsForTheNextCommit() throws {
        let store = try MetadataStore(path: ":memory:", batchDelay: slowBatchDelay)
        defer { try? store.close() }
        let log = ActionLog()
        store.afterCommit { log.append("ran") }
        #expect(log.items.isEmpty)
        try store.commit(durable: false)
        #expect(log.items == ["ran"])
    }

    @Test func theFlusherCommitsAndRunsActionsBehind() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        let store = try MetadataStore(path: path, batchDelay: .milliseconds(5))
        defer { try? store.close() }
        let log = ActionLog()
        store.entryCreated(sampleRecord(2))
        store.afterCommit { log.append("entry committed = \(committedEntryExists(path, 2))") }
        try await eventually("the action after the commit ran", timeout: 10) { !log.items.isEmpty }
        #expect(log.items == ["entry committed = true"])
        #expect(committedEntryExists(path, 2))
    }

    /// Provokes a real failure: another connection holds the database's write lock, so the
    /// store's `BEGIN IMMEDIATE` fails with SQLITE_BUSY after its busy timeout (5 s).
    @Test(.timeLimit(.minutes(1)))
    func aFailedCommitKeepsTheBatchInOrder() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        let store = try MetadataStore(path: path, batchDelay: slowBatchDelay)
        let log = ActionLog()
        #expect(store.lastCommitError == nil)

        let blocker = try SQLiteConnection(path: path)
        try blocker.execute("BEGIN IMMEDIATE")
        store.entryCreated(sampleRecord(2, name: "first"))
        store.xattrSet(InodeNumber(2), name: "user.k", value: [7])
        store.afterCommit { log.append("ran") }
        // SQLite's busy wait takes seconds: not on a cooperative thread (see `waiting`).
        let failure = await waiting { () -> (any Error)? in
            do {
                try store.commit(durable: true)
                return nil
            } catch {
                return error
            }
        }
        #expect(failure is MetadataError, "\(String(describing: failure))")
        #expect(store.lastCommitError != nil)
        #expect(log.items.isEmpty, "actions of a failed batch do not run")
        #expect(!committedEntryExists(path, 2))

        // A change recorded after the failure must land after the kept batch.
        var renamed = sampleRecord(2, name: "second")
        renamed.fileID = FileID(hex: "0123456789abcdef0123456789abcdef")!
        store.entryChanged(renamed)
        try blocker.execute("ROLLBACK")
        try store.commit(durable: true)
        #expect(log.items == ["ran"])
        let state = try store.load()
        #expect(state.entries == [renamed])
        #expect(state.xattrs[InodeNumber(2)] == ["user.k": [7]])
        await waiting { try? store.close() }
    }

    /// `batchDelay` is how long the flusher waits to gather a batch; a delay of whole seconds
    /// must delay the commit, not be taken as zero.
    @Test func batchDelayOfWholeSecondsIsHonoured() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        let store = try MetadataStore(path: path, batchDelay: .seconds(2))
        store.entryCreated(sampleRecord(2))
        // Looked at 0.3 s later on a thread of its own: an await could resume much later than
        // that on a busy cooperative pool, after the flusher's 2 s.
        let committedEarly = await waiting {
            Thread.sleep(forTimeInterval: 0.3)  // scenario: well inside the 2 s batch delay
            return committedEntryExists(path, 2)
        }
        #expect(!committedEarly, "committed before the 2 s batch delay was over")
        // Closing waits for the flusher's 2 s: not on a cooperative thread.
        await waiting { try? store.close() }
    }

    @Test func aProducerPastTheLimitWaitsForTheFlusherToTakeTheQueue() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/state.db"
        let store = try MetadataStore(path: path, batchDelay: slowBatchDelay)
        defer { try? store.close() }
        for ino in 2...11 { store.entryCreated(sampleRecord(UInt64(ino))) }

        store.waitForQueue(below: 20)
        #expect(store.queuedChanges == 10, "under the limit: no wait, nothing committed")
        #expect(!committedEntryExists(path, 2))

        store.waitForQueue(below: 5, patience: .seconds(60))
        #expect(store.queuedChanges <= 5, "returned only once a commit took the queue")
        #expect(store.lastCommitError == nil)
    }
}
