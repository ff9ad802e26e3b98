import Foundation
import SyncBackend
import SyncBackendTesting
import Synchronization
import Testing

@testable import SyncFS

/// `FeedReadAhead`: pages read ahead are the pages a direct read gives, each read once; a page read
/// ahead for a cursor the follower does not ask for is dropped; `finish` waits for a read in flight.
@Suite struct FeedReadAheadTests {
    /// Counts the feed reads it forwards (and their cursors), each slowed by `delay`.
    final class CountingFeed: ForwardingTestContainer {
        let base: InMemoryContainer
        let delay: Duration
        let reads = Mutex<[FeedCursor]>([])
        let finished = Atomic<Int>(0)

        init(_ base: InMemoryContainer, delay: Duration = .zero) {
            self.base = base
            self.delay = delay
        }

        func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
            reads.withLock { $0.append(cursor) }
            if delay > .zero { try? await Task.sleep(for: delay) }
            defer { finished.add(1, ordering: .relaxed) }
            return try await base.changes(after: cursor, limit: limit)
        }
    }

    private static func feed(files: Int, delay: Duration = .zero) async throws -> CountingFeed {
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
        return CountingFeed(container, delay: delay)
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
        #expect(feed.reads.withLock { $0.count } == 3, "the page read ahead was read, then dropped")
    }

    @Test func finishWaitsForTheReadInFlight() async throws {
        let feed = try await Self.feed(files: 3, delay: .milliseconds(200))
        let pages = FeedReadAhead(container: BlockingContainer(base: feed), limit: 2)
        let finishedAfter = await waiting { () -> Int in
            pages.start(after: .beginning)
            pages.finish()
            return feed.finished.load(ordering: .relaxed)
        }
        #expect(finishedAfter == 1, "finish returned before the read ended")
    }
}
