import Foundation
import SyncBackend
import Testing

@testable import SyncPostgres

/// Version history, the trash, retention and storage accounting of `PostgresContainer`,
/// against the PostgreSQL of `scripts/services.sh` (without `SYNCFS_TEST_PG_URL` these fail).
@Suite struct PostgresHistoryTests {
    @Test func historyListsEveryVersionNewestFirstAndTheTrashItsTombstones() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "history")
        let id = FileID.random()
        let (a, b) = (encodedChunk("first"), encodedChunk("second"))
        let v1 = try await mustStore(container, id, base: 0, fileState("f", [a]), chunks: [a])
        let v2 = try await mustStore(container, id, base: v1.version, fileState("f", [b]), chunks: [b])
        let gone = try await mustCommit(container, deletion(v2))

        let history = try await container.history(of: id, limit: 10)
        #expect(history.map(\.entry) == [gone, v2, v1])
        #expect(history[0].replacedAt == nil)
        #expect(history[1].replacedAt == history[0].committedAt)
        #expect(history[2].replacedAt == history[1].committedAt)
        #expect(history[2].committedAt > 0 && history[2].committedAt <= history[1].committedAt)
        #expect(try await container.history(of: id, limit: 2).map(\.entry) == [gone, v2])
        #expect(try await container.history(of: FileID.random(), limit: 10).isEmpty)
        await #expect(throws: ContainerProtocolError.self) { _ = try await container.history(of: id, limit: 0) }
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await container.deletedEntries(before: nil, limit: 1001)
        }

        // The trash: newest deletion first, paged by `before`.
        let other = try await mustStore(container, FileID.random(), base: 0, fileState("g", [a]), chunks: [])
        let otherGone = try await mustCommit(container, deletion(other))
        let trash = try await container.deletedEntries(before: nil, limit: 10)
        #expect(trash.map(\.entry) == [otherGone, gone])
        #expect(trash.allSatisfy { $0.replacedAt == nil })
        #expect(try await container.deletedEntries(before: otherGone.version, limit: 10).map(\.entry) == [gone])
        #expect(try await container.deletedEntries(before: nil, limit: 1).map(\.entry) == [otherGone])
        #expect(try await container.deletedEntries(before: gone.version, limit: 10).isEmpty)

        // Restoring is a new commit of an old state on the tombstone: history grows, the trash shrinks.
        let restored = try await mustCommit(container, put(id, base: gone.version, v1.state))
        #expect(try await container.history(of: id, limit: 10).map(\.entry) == [restored, gone, v2, v1])
        #expect(try await container.deletedEntries(before: nil, limit: 10).map(\.entry) == [otherGone])
        await fixture.close(store)
    }

    @Test func retentionPrunesByDaysAndKeepsTheLastVersionsAndADryRunChangesNothing() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "retention")
        #expect(try await container.retention() == RetentionPolicy())
        await #expect(throws: ContainerProtocolError.self) {
            try await container.setRetention(RetentionPolicy(days: -1))
        }
        try await container.setRetention(RetentionPolicy(days: 1, versions: 1))
        #expect(try await container.retention() == RetentionPolicy(days: 1, versions: 1))

        let id = FileID.random()
        let chunks = (0..<4).map { encodedChunk("version \($0)") }
        var entry = try await mustStore(container, id, base: 0, fileState("f", [chunks[0]]), chunks: [chunks[0]])
        for chunk in chunks.dropFirst() {
            entry = try await mustStore(container, id, base: entry.version, fileState("f", [chunk]), chunks: [chunk])
        }
        let doomed = try await mustStore(
            container, FileID.random(), base: 0, fileState("d", [encodedChunk("deleted")]),
            chunks: [encodedChunk("deleted")])
        let tombstone = try await mustCommit(container, deletion(doomed))

        // Within a day nothing goes.
        let today = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(today.versionsPruned == 0 && today.tombstonesPurged == 0 && today.chunksDeleted == 0, "\(today)")
        #expect(try await container.history(of: id, limit: 10).count == 4)

        // Two days later: the last superseded version of each entry stays (versions: 1; for the
        // deleted file, its last live state), the older two go, the tombstone leaves the trash,
        // and the chunks only the pruned versions referenced are deleted.
        let later = nowNanoseconds() + 2 * RetentionPolicy.nanosecondsPerDay
        let before = try await container.storageStats()
        let dry = try await container.collectGarbage(CollectionOptions(grace: .zero, dryRun: true, now: later))
        #expect(try await container.storageStats() == before)
        #expect(try await container.history(of: id, limit: 10).count == 4)
        let report = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(report == dry)
        #expect(report.versionsPruned == 2 && report.tombstonesPurged == 1, "\(report)")
        #expect(report.chunksDeleted == 2 && report.chunksExamined == 5, "\(report)")
        #expect(report.bytesFreed == Int64(chunks[0].payload.count + chunks[1].payload.count))
        #expect(try await container.history(of: id, limit: 10).map(\.entry.version).count == 2)
        #expect(try await container.history(of: tombstone.id, limit: 10).map(\.entry) == [doomed])
        #expect(try await container.deletedEntries(before: nil, limit: 10).isEmpty)
        #expect(try await container.missingChunks(chunks.map(\.hash)) == [chunks[0].hash, chunks[1].hash])
        // The tombstone stays in the feed.
        #expect(try await container.entry(tombstone.id) == tombstone)
        // An explicit policy overrides the container's: days 0, no versions keeps no superseded one.
        let none = try await container.collectGarbage(
            CollectionOptions(retention: RetentionPolicy(days: 0), grace: .zero))
        #expect(none.versionsPruned == 2 && none.chunksDeleted == 2, "\(none)")
        #expect(try await container.history(of: tombstone.id, limit: 10).isEmpty)
        #expect(try await container.history(of: id, limit: 10).map(\.entry) == [entry])
        await fixture.close(store)
    }

    @Test func storageStatsCountEntriesVersionsAndChunks() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "stats")
        #expect(try await container.storageStats() == StorageStats())
        let big = encodedChunk(Array(repeating: 7, count: 10_000))  // compresses
        let small = encodedChunk("small")
        let dir = try await mustCommit(container, put(FileID.random(), base: 0, directory("dir")))
        let one = try await mustStore(container, FileID.random(), base: 0, fileState("one", [big, big]), chunks: [big])
        _ = try await mustStore(container, one.id, base: one.version, fileState("one", [big, small]), chunks: [small])
        let two = try await mustStore(container, FileID.random(), base: 0, fileState("two", [small]), chunks: [])
        _ = try await mustCommit(container, deletion(two))
        let stats = try await container.storageStats()
        var expected = StorageStats()
        expected.liveEntries = 2
        expected.trashedEntries = 1
        expected.tombstones = 1
        expected.keptVersions = 2
        expected.chunks = 2
        expected.storedBytes = Int64(big.payload.count + small.payload.count)
        expected.chunkPlainBytes = 10_005
        expected.logicalBytes = 10_005
        #expect(stats == expected)
        #expect((stats.compressionRatio ?? 0) > 10)
        _ = dir
        await fixture.close(store)
    }

    @Test func aSchemaThreeDatabaseIsRefusedThenMigratedKeepingItsData() async throws {
        let fixture = try await PostgresFixture.make(initialize: false)
        try await fixture.initialize(upTo: 3)
        try await fixture.sql("INSERT INTO syncfs_containers (name, container_id, version) VALUES ('old', 'cid', 1)")
        let id = FileID.random()
        let chunk = encodedChunk("old bytes")
        try await fixture.blobs.put(chunk)
        try await fixture.sql(
            """
            INSERT INTO syncfs_entries (container, file_id, version, deleted, device, parent, name, kind, mode,
                mtime, size, manifest)
            SELECT id, '\(id.hex)', 1, false, 'd', '\(FileID.root.hex)', 'f'::bytea, 1, 420, 1, \(chunk.plainLength),
                '\\x\(LocalEntryEncoding.encodeManifest(fileState("f", [chunk]).manifest)!.map { String(format: "%02x", $0) }.joined())'::bytea
            FROM syncfs_containers WHERE name = 'old'
            """)
        try await fixture.sql(
            """
            INSERT INTO syncfs_chunks (container, hash, plain_length, encoding)
            SELECT id, '\(chunk.hash.hex)', \(chunk.plainLength), \(chunk.encoding.rawValue)
            FROM syncfs_containers WHERE name = 'old'
            """)
        await #expect(throws: PostgresStoreError.schemaTooOld(found: 3, supported: PostgresSchema.currentVersion)) {
            _ = try await fixture.open()
        }
        #expect(
            PostgresStoreError.schemaTooOld(found: 3, supported: PostgresSchema.currentVersion).description.contains(
                "server-init"))
        try await PostgresStore.initialize(settings: fixture.settings)
        let store = try await fixture.open()
        let container = try #require(try await store.container(named: "old"))
        let history = try await container.history(of: id, limit: 10)
        #expect(history.count == 1 && history.first?.committedAt == 0 && history.first?.replacedAt == nil)
        #expect(try await container.chunk(chunk.hash) == chunk)
        // The old chunk is live and referenced: a collection keeps it.
        let report = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(report.chunksExamined == 1 && report.chunksDeleted == 0, "\(report)")
        // A tombstone from before history counts from the upgrade: still in the trash a day later,
        // purged a month later.
        let gone = FileID.random()
        try await fixture.sql(
            """
            INSERT INTO syncfs_entries (container, file_id, version, deleted, device, parent, name, kind, mode,
                mtime, size, committed_at)
            SELECT id, '\(gone.hex)', 2, true, 'd', '\(FileID.root.hex)', 'g'::bytea, 1, 420, 1, 0, 0
            FROM syncfs_containers WHERE name = 'old'
            """)
        try await fixture.sql("UPDATE syncfs_containers SET version = 2 WHERE name = 'old'")
        let day: Int64 = RetentionPolicy.nanosecondsPerDay
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        let dayLater = try await container.collectGarbage(CollectionOptions(grace: .zero, now: now + day))
        #expect(dayLater.tombstonesPurged == 0, "\(dayLater)")
        #expect(try await container.deletedEntries(before: nil, limit: 10).map(\.entry.id) == [gone])
        let monthLater = try await container.collectGarbage(CollectionOptions(grace: .zero, now: now + 31 * day))
        #expect(monthLater.tombstonesPurged == 1, "\(monthLater)")
        #expect(try await container.deletedEntries(before: nil, limit: 10).isEmpty)
        // The first commit after the migration keeps the old version.
        let current = try #require(history.first?.entry)
        _ = try await mustCommit(container, deletion(current))
        #expect(try await container.history(of: id, limit: 10).count == 2)
        await fixture.close(store)
    }
}
