import Foundation
import SyncBackend
import TestSupport
import Testing

@testable import SyncPostgres

/// `PostgresContainer` as several server processes use it: two stores (own pools, own
/// listeners) on one database. Against the real PostgreSQL of `scripts/services.sh`.
@Suite struct PostgresContainerTests {
    @Test func concurrentCommitsOnOneBaseFromTwoProcessesHaveOneWinner() async throws {
        let fixture = try await PostgresFixture.make()
        let first = try await fixture.open()
        let second = try await fixture.open()
        let a = try await first.createContainer(named: "shared")
        let b = try #require(try await second.container(named: "shared"))
        #expect(a.containerID == b.containerID)
        var versions: [EntryVersion] = []
        for round in 0..<20 {
            let id = FileID.random()
            async let fromA = a.commit(put(id, base: 0, directory("a\(round)"), device: "a"))
            async let fromB = b.commit(put(id, base: 0, directory("b\(round)"), device: "b"))
            let outcomes = try await [fromA, fromB]
            let committed = outcomes.compactMap { outcome -> RemoteEntry? in
                if case .committed(let entry) = outcome { return entry }
                return nil
            }
            try #require(committed.count == 1, "round \(round): \(outcomes)")
            let winner = committed[0]
            for outcome in outcomes where outcome != .committed(winner) {
                #expect(outcome == .versionConflict(current: winner), "round \(round)")
            }
            versions.append(winner.version)
        }
        #expect(versions == Array(1...20))
        await fixture.close(first, second)
    }

    /// Also the figure of the report: commits/s of two processes on one container (printed,
    /// with the embedded local container's under the same load for comparison; not asserted).
    @Test func versionsStayStrictlyIncreasingUnderConcurrentLoad() async throws {
        let fixture = try await PostgresFixture.make()
        let first = try await fixture.open()
        let second = try await fixture.open()
        let a = try await first.createContainer(named: "load")
        let b = try #require(try await second.container(named: "load"))
        let perWorker = 50
        let (committed, elapsed) = try await Self.load(a, b, perWorker: perWorker)
        for versions in committed { #expect(versions == versions.sorted() && Set(versions).count == versions.count) }
        #expect(committed.flatMap { $0 }.sorted() == Array(1...EntryVersion(4 * perWorker)))
        let temporary = try TemporaryDirectory("syncpostgres-local")
        let local = temporary.path + "/container"
        let (_, localElapsed) = try await Self.load(
            try LocalContainer.openOrCreate(at: local), try LocalContainer.openOrCreate(at: local),
            perWorker: perWorker)
        print(
            "PostgresContainer, two stores: \(Self.rate(4 * perWorker, elapsed)) commits/s; "
                + "LocalContainer, two instances: \(Self.rate(4 * perWorker, localElapsed)) commits/s")
        // The feed lists them all once, in commit order.
        var cursor = FeedCursor.beginning
        var seen: [EntryVersion] = []
        while true {
            let batch = try await b.changes(after: cursor, limit: 64)
            seen += batch.entries.map(\.version)
            cursor = batch.cursor
            if !batch.moreComing { break }
        }
        #expect(seen == Array(1...EntryVersion(4 * perWorker)))
        await fixture.close(first, second)
    }

    static func rate(_ count: Int, _ elapsed: Duration) -> Int {
        Int(Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
    }

    /// Four workers (two on each instance) each commit `perWorker` new directories: the versions
    /// each worker got, in its order, and how long it all took.
    static func load(_ a: any Container, _ b: any Container, perWorker: Int) async throws -> (
        [[EntryVersion]], Duration
    ) {
        let start = ContinuousClock.now
        let committed = try await withThrowingTaskGroup(of: [EntryVersion].self) { group in
            for worker in 0..<4 {
                let container = worker % 2 == 0 ? a : b
                group.addTask {
                    var versions: [EntryVersion] = []
                    for index in 0..<perWorker {
                        let outcome = try await container.commit(
                            put(FileID.random(), base: 0, directory("w\(worker)-\(index)")))
                        guard case .committed(let entry) = outcome else { throw TestFailure("\(outcome)") }
                        versions.append(entry.version)
                    }
                    return versions
                }
            }
            var all: [[EntryVersion]] = []
            for try await versions in group { all.append(versions) }
            return all
        }
        return (committed, ContinuousClock.now - start)
    }

    @Test func aCommitThroughOneProcessWakesAWaiterOnTheOtherByNotify() async throws {
        let fixture = try await PostgresFixture.make()
        // The backstop re-check is a minute away: only the NOTIFY can wake the waiter in time.
        let first = try await fixture.open(recheck: .seconds(60))
        let second = try await fixture.open(recheck: .seconds(60))
        let a = try await first.createContainer(named: "push")
        let b = try #require(try await second.container(named: "push"))
        try await waitUntilListening(second)
        let waiter = Task { try await b.waitForChanges(after: .beginning, timeout: .seconds(50)) }
        try await Task.sleep(for: .milliseconds(300))  // let the waiter read version 0 and sleep
        let start = ContinuousClock.now
        _ = try await a.commit(put(FileID.random(), base: 0, directory("hello")))
        #expect(try await waiter.value)
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(30), "woken after \(elapsed): by the backstop, not the NOTIFY")
        print("PostgresContainer: a waiter on another store woke \(elapsed) after the commit")
        // A wait with nothing new times out with false.
        let cursor = try await b.changes(after: .beginning, limit: 10).cursor
        #expect(try await b.waitForChanges(after: cursor, timeout: .milliseconds(200)) == false)
        await fixture.close(first, second)
    }

    @Test func chunksAreRecordedOnlyAfterTheirBytesAreStored() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "chunks")
        let bytes = Array("some chunk bytes".utf8)
        let hash = ChunkHash(bytes: Array(repeating: 0xAB, count: 32))!
        let chunk = EncodedChunk(hash: hash, encoding: .raw, plainLength: bytes.count, payload: bytes)
        #expect(try await container.missingChunks([hash]) == [hash])
        await #expect(throws: ContainerProtocolError.chunkNotFound(hash)) { try await container.chunk(hash) }

        // The blob store is unreachable: the put fails as unavailable and records nothing.
        let marker = fixture.blobDirectory + "/" + LocalChunkBlobStore.markerName
        try FileManager.default.moveItem(atPath: marker, toPath: marker + ".away")
        let failed = await containerError { try await container.putChunk(chunk) }
        #expect(failed?.isRetryable == true, "\(String(describing: failed))")
        #expect(try await container.missingChunks([hash]) == [hash])
        try FileManager.default.moveItem(atPath: marker + ".away", toPath: marker)

        try await container.putChunk(chunk)
        try await container.putChunk(chunk)  // idempotent
        #expect(try await container.missingChunks([hash]).isEmpty)
        #expect(try await container.chunk(hash) == chunk)
        // A file may now reference it.
        let file = EntryState(
            parent: .root, name: Array("f".utf8), kind: .file, mode: 0o644, mtime: 1, size: Int64(bytes.count),
            manifest: [ChunkRef(hash: hash, length: Int64(bytes.count))])
        guard case .committed = try await container.commit(put(FileID.random(), base: 0, file)) else {
            Issue.record("a file over a stored chunk was refused")
            return
        }
        // Chunks are per container: another one does not hold it.
        let other = try await store.createContainer(named: "other")
        #expect(try await other.missingChunks([hash]) == [hash])
        // Bytes lost behind a recorded chunk: a retryable storage failure, never "not found".
        try await fixture.blobs.delete(hash)
        let lost = await containerError { _ = try await container.chunk(hash) }
        guard case .storageFailure = lost else {
            Issue.record("a lost blob read as \(String(describing: lost))")
            return
        }
        await fixture.close(store)
    }

    @Test func hostileInputsAreRefusedAndDataIsOnlyData() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "hostile")
        let refused: [(String, CommitRequest)] = [
            ("dot-dot", put(FileID.random(), base: 0, directory(".."))),
            ("slash", put(FileID.random(), base: 0, directory("a/b"))),
            (
                "NUL",
                put(
                    FileID.random(), base: 0,
                    EntryState(
                        parent: .root, name: [0x61, 0], kind: .directory, mode: 0o755, mtime: 0, size: 0))
            ),
            ("long name", put(FileID.random(), base: 0, directory(String(repeating: "x", count: 256)))),
            ("root delete", CommitRequest(id: .root, baseVersion: 0, change: .delete, device: "d")),
            // Decided inside the transaction by the shared rules, and still `invalidRequest`.
            ("absent delete", CommitRequest(id: FileID.random(), baseVersion: 0, change: .delete, device: "d")),
            ("absurd base", put(FileID.random(), base: .max, directory("x"))),
            (
                "bad mode",
                put(
                    FileID.random(), base: 0,
                    EntryState(
                        parent: .root, name: [0x61], kind: .directory, mode: 0o170000, mtime: 0, size: 0))
            ),
        ]
        for (name, request) in refused {
            let error = await containerError { _ = try await container.commit(request) }
            guard case .invalidRequest = error else {
                Issue.record("\(name): \(String(describing: error))")
                continue
            }
        }
        for token in ["abc", "-1", "01", "99999999999999999999", "5"] {
            let error = await containerError {
                _ = try await container.changes(after: FeedCursor(token: token), limit: 1)
            }
            guard case .invalidRequest = error else {
                Issue.record("cursor \(token): \(String(describing: error))")
                continue
            }
        }
        let limit = await containerError { _ = try await container.changes(after: .beginning, limit: 0) }
        #expect(limit?.isRetryable == false)
        await #expect(throws: ContainerProtocolError.self) { try await store.createContainer(named: "a\u{7}b") }
        await #expect(throws: ContainerProtocolError.self) { try await store.createContainer(named: "hostile") }
        // SQL in names and devices is stored as data (bound parameters only).
        let injection = "x'); DROP TABLE syncfs_entries; --"
        let id = FileID.random()
        guard
            case .committed(let entry) = try await container.commit(
                put(id, base: 0, directory(injection), device: injection))
        else {
            Issue.record("a name with quotes was refused")
            return
        }
        #expect(try await container.entry(id) == entry)
        #expect(try await store.container(named: injection) == nil)
        let odd = try await store.createContainer(named: injection)
        #expect(try await store.container(named: injection)?.containerID == odd.containerID)
        await fixture.close(store)
    }
}

/// Many idle waiters on one container share their reads of its version.
@Suite struct PostgresWaiterTests {
    @Test func manyWaitersCostOneReadPerNotification() async throws {
        let fixture = try await PostgresFixture.make()
        let first = try await fixture.open(recheck: .seconds(60))
        let second = try await fixture.open(recheck: .seconds(60))
        let a = try await first.createContainer(named: "waiters")
        let b = try #require(try await second.container(named: "waiters"))
        try await waitUntilListening(second)
        let waiters = (0..<20).map { _ in
            Task { try await b.waitForChanges(after: .beginning, timeout: .seconds(50)) }
        }
        try await Task.sleep(for: .milliseconds(500))  // let them all look and sleep
        let before = second.versionReads.load(ordering: .relaxed)
        _ = try await a.commit(put(FileID.random(), base: 0, directory("one")))
        for waiter in waiters { #expect(try await waiter.value) }
        let reads = second.versionReads.load(ordering: .relaxed) - before
        #expect(before <= 3, "the first looks were not shared: \(before) reads")
        #expect(reads <= 3, "20 waiters woken by one commit read the version \(reads) times")
        await fixture.close(first, second)
    }
}

/// Connections cut by the server (a restart, a failover, an administrator) are transient.
@Suite struct PostgresReconnectTests {
    @Test func afterEveryConnectionIsCutTheListenerAndThePoolRecover() async throws {
        let fixture = try await PostgresFixture.make()
        let first = try await fixture.open(recheck: .seconds(60))
        let second = try await fixture.open(recheck: .seconds(60))
        let a = try await first.createContainer(named: "cut")
        let b = try #require(try await second.container(named: "cut"))
        try await waitUntilListening(second)
        try await fixture.sql(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            """)
        // The cut may heal before it is seen; either way the store listens again below.
        try? await eventually("the store sees the cut", timeout: 30) { !second.isListening }
        try await waitUntilListening(second)
        let waiter = Task { try await b.waitForChanges(after: .beginning, timeout: .seconds(50)) }
        try await Task.sleep(for: .milliseconds(300))  // let the waiter read version 0 and sleep
        // The pool may hand out a connection that was cut: that answer is `unavailable`, then it heals.
        var outcome: CommitOutcome?
        for _ in 0..<10 where outcome == nil {
            do {
                outcome = try await a.commit(put(FileID.random(), base: 0, directory("after")))
            } catch {
                guard case .unavailable = error else { throw error }
            }
        }
        guard case .committed = try #require(outcome) else {
            Issue.record("\(String(describing: outcome))")
            return
        }
        let start = ContinuousClock.now
        #expect(try await waiter.value)
        #expect(ContinuousClock.now - start < .seconds(30), "woken by the backstop, not the NOTIFY")
        await fixture.close(first, second)
    }
}
