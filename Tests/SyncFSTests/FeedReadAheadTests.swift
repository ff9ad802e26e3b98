import Foundation
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// `FeedReadAhead`: pages read ahead are the pages a direct read gives, each read once; a page read
/// ahead for a cursor the follower does not ask for is dropped; so is one in flight at a pause or stop.
@Suite struct FeedReadAheadTests {
    /// Counts the feed reads it forwards (and their cursors); with a gate, each read waits for it.
    final class CountingFeed: ForwardingTestContainer {
        let base: InMemoryContainer
        let gate: DispatchSemaphore?
        let reads = Mutex<[FeedCursor]>([])
        let finished = Atomic<Int>(0)

        init(_ base: InMemoryContainer, gated: Bool = false) {
            self.base = base
            gate = gated ? DispatchSemaphore(value: 0) : nil
        }

        func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
            reads.withLock { $0.append(cursor) }
            if let gate { await waiting { gate.wait() } }
            defer { finished.add(1, ordering: .relaxed) }
            return try await base.changes(after: cursor, limit: limit)
        }
    }

    private static func feed(files: Int, gated: Bool = false) async throws -> CountingFeed {
        let container = InMemoryContainer()
        for index in 0..<files {
            let request = CommitRequest(
                id: FileID.random(), baseVersion: 0,
                change: .put(
                    EntryState(
                        parent: .root, name: Array("f\(index)".utf8), kind: .file, mode: 0o644, mtime: 1, size: 0)),
                device: "test")
            guard case .committed = try await container.commit(request) else {
                throw TestFailure("commit \(index) refused")
            }
        }
        return CountingFeed(container, gated: gated)
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func pagesReadAheadAreTheFeedsPagesEachReadOnce() async throws {
        let feed = try await Self.feed(files: 5)
        let pages = FeedReadAhead(container: BlockingContainer(base: feed), limit: 2)
        let names = await waiting { () -> Result<[[String]], SyncFailure> in
            Result { () throws(SyncFailure) in
                var cursor = FeedCursor.beginning
                var names: [[String]] = []
                while true {
                    let batch = try pages.page(after: cursor)
                    if batch.moreComing { pages.start(after: batch.cursor) }
                    names.append(batch.entries.map { String(decoding: $0.state.name, as: UTF8.self) })
                    cursor = batch.cursor
                    if !batch.moreComing { return names }
                }
            }
        }
        #expect(try names.get() == [["f0", "f1"], ["f2", "f3"], ["f4"]])
        #expect(feed.reads.withLock { $0.count } == 3, "one read per page: \(feed.reads.withLock { $0 })")
    }

    @Test func aPageReadAheadForAnotherCursorIsDropped() async throws {
        let feed = try await Self.feed(files: 5)
        let blocking = BlockingContainer(base: feed)
        let pages = FeedReadAhead(container: blocking, limit: 2)
        let result = await waiting { () -> Result<[String], SyncFailure> in
            Result { () throws(SyncFailure) in
                let first = try blocking.changes(after: .beginning, limit: 2)
                // Read ahead from the second page, then asked again from the start (a failed apply).
                pages.start(after: first.cursor)
                let again = try pages.page(after: .beginning)
                return again.entries.map { String(decoding: $0.state.name, as: UTF8.self) }
            }
        }
        #expect(try result.get() == ["f0", "f1"])
        #expect(
            waitUntil(timeout: 10) { feed.reads.withLock { $0.count } == 3 },
            "the page read ahead was read too, then dropped: \(feed.reads.withLock { $0 })")
    }

    /// A pause or a stop drops the read in flight without waiting for it (a feed read is not
    /// cancellable, and may last a request's deadline); the next page is read afresh.
    @Test func aDroppedReadIsNotWaitedForAndNotUsed() async throws {
        let feed = try await Self.feed(files: 3, gated: true)
        let pages = FeedReadAhead(container: BlockingContainer(base: feed), limit: 2)
        let (finishedAtDrop, readsAtDrop) = await waiting { () -> (Int, Int) in
            pages.start(after: .beginning)
            _ = waitUntil(timeout: 10) { feed.reads.withLock { $0.count } == 1 }
            pages.drop()
            return (feed.finished.load(ordering: .relaxed), feed.reads.withLock { $0.count })
        }
        #expect(readsAtDrop == 1 && finishedAtDrop == 0, "drop returned while the read was still in flight")
        feed.gate?.signal()
        feed.gate?.signal()
        let again = await waiting { () -> Result<Int, SyncFailure> in
            Result { () throws(SyncFailure) in try pages.page(after: .beginning).entries.count }
        }
        #expect(try again.get() == 2)
        #expect(feed.reads.withLock { $0.count } == 2, "the page after the drop was a read of its own")
    }
}
