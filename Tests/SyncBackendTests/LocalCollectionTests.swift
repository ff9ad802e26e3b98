import Foundation
import Glibc
import SQLiteSupport
import Testing

@testable import SyncBackend

/// Retention, garbage collection and storage figures of the local container
/// (`CollectableContainer`, `LocalCollector`).
@Suite("LocalContainer collection")
struct LocalCollectionTests {
    let directory: String
    var path: String { directory + "/container" }
    static let day = RetentionPolicy.nanosecondsPerDay

    init() throws {
        directory = try makeTemporaryDirectory()
    }

    private func chunkFile(_ chunk: EncodedChunk) -> String {
        path + "/chunks/" + chunk.hash.hex.prefix(2) + "/" + chunk.hash.hex
    }

    private func exists(_ chunk: EncodedChunk) -> Bool { access(chunkFile(chunk), F_OK) == 0 }

    /// Sets the chunk file's mtime `seconds` into the past (stored long ago).
    private func backdate(_ chunk: EncodedChunk, seconds: Int) throws {
        var times = [timespec](repeating: timespec(tv_sec: time(nil) - seconds, tv_nsec: 0), count: 2)
        guard utimensat(AT_FDCWD, chunkFile(chunk), &times, 0) == 0 else {
            throw TestSetupFailure("cannot backdate \(chunkFile(chunk)): \(errno)")
        }
    }

    /// A file `name` written three times (chunks a, b, c), and a stray chunk nobody names.
    private func threeVersions(_ container: LocalContainer) async throws
        -> (id: FileID, chunks: [EncodedChunk], stray: EncodedChunk)
    {
        let chunks = [rawChunk("version a"), rawChunk("version b"), rawChunk("version c")]
        let stray = rawChunk("never committed")
        for chunk in chunks + [stray] { try await container.putChunk(chunk) }
        let id = FileID.random()
        var base: EntryVersion = 0
        for chunk in chunks {
            base = try await container.mustPut(id, base: base, fileState("f", chunks: [chunk])).version
        }
        return (id, chunks, stray)
    }

    @Test func versionsArePrunedByAge() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        #expect(try await container.retention() == RetentionPolicy())
        let (id, chunks, stray) = try await threeVersions(container)

        // Within 30 days: every version and its chunks stay; only the stray chunk goes.
        let first = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(first.versionsPruned == 0 && first.chunksExamined == 4 && first.chunksDeleted == 1)
        #expect(first.bytesFreed == Int64(LocalChunkFile.headerSize + stray.payload.count))
        #expect(!exists(stray) && chunks.allSatisfy(exists))
        #expect(try await container.history(of: id, limit: 10).count == 3)

        // 31 days later the superseded versions and their chunks go; the current one stays.
        let later = WallClock.nanoseconds() + 31 * Self.day
        let second = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(second.versionsPruned == 2 && second.chunksDeleted == 2 && second.chunksExamined == 3)
        #expect(!exists(chunks[0]) && !exists(chunks[1]) && exists(chunks[2]))
        #expect(
            try await container.history(of: id, limit: 10).map(\.entry.state.manifest.first?.hash) == [chunks[2].hash])
        #expect(try await container.chunk(chunks[2].hash) == chunks[2])
    }

    @Test func versionsArePrunedByCount() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        try await container.setRetention(RetentionPolicy(days: 0, versions: 1))
        #expect(try await container.retention() == RetentionPolicy(days: 0, versions: 1))
        let (id, chunks, _) = try await threeVersions(container)

        let report = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(report.versionsPruned == 1 && report.chunksDeleted == 2)  // version a and the stray chunk
        #expect(!exists(chunks[0]) && exists(chunks[1]) && exists(chunks[2]))
        #expect(try await container.history(of: id, limit: 10).count == 2)

        // An explicit policy overrides the stored one for one collection.
        let none = try await container.collectGarbage(
            CollectionOptions(retention: RetentionPolicy(days: 0, versions: 0), grace: .zero))
        #expect(none.versionsPruned == 1 && !exists(chunks[1]) && exists(chunks[2]))
        // A bad policy is refused, stored or given.
        #expect(
            await protocolError { try await container.setRetention(RetentionPolicy(days: -1)) }?.isInvalidRequest
                == true)
        #expect(
            await protocolError {
                _ = try await container.collectGarbage(CollectionOptions(retention: RetentionPolicy(versions: 200_000)))
            }?.isInvalidRequest == true)
    }

    @Test func aChunkOnlyATombstoneOrAKeptVersionNamesSurvivesUntilItsRetentionEnds() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        let trashed = rawChunk("only in the trash")
        let old = rawChunk("only in an old version")
        let current = rawChunk("current")
        for chunk in [trashed, old, current] { try await container.putChunk(chunk) }
        let deleted = try await container.mustPut(.random(), base: 0, fileState("deleted", chunks: [trashed]))
        let tombstone = try await container.mustDelete(deleted.id, base: deleted.version)
        let rewritten = try await container.mustPut(.random(), base: 0, fileState("rewritten", chunks: [old]))
        try await container.mustPut(rewritten.id, base: rewritten.version, fileState("rewritten", chunks: [current]))

        let kept = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(kept.chunksDeleted == 0 && kept.tombstonesPurged == 0 && kept.versionsPruned == 0)
        #expect(exists(trashed) && exists(old))

        let later = WallClock.nanoseconds() + 30 * Self.day + 1
        let purged = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(purged.tombstonesPurged == 1 && purged.versionsPruned == 2 && purged.chunksDeleted == 2)
        #expect(!exists(trashed) && !exists(old) && exists(current))
        // Out of the trash and the history, still in the feed as a tombstone.
        #expect(try await container.deletedEntries(before: nil, limit: 10).isEmpty)
        #expect(try await container.history(of: deleted.id, limit: 10).isEmpty)
        #expect(try await container.entry(deleted.id) == tombstone)
        let stats = try await container.storageStats()
        #expect(stats.tombstones == 1 && stats.trashedEntries == 0 && stats.keptVersions == 0)
    }

    @Test func graceKeepsAFreshChunkAndAChunkStoredAgain() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        let fresh = rawChunk("uploaded a moment ago")
        let old = rawChunk("uploaded two hours ago")
        let again = rawChunk("uploaded two hours ago and again now")
        for chunk in [fresh, old, again] { try await container.putChunk(chunk) }
        try backdate(old, seconds: 7200)
        try backdate(again, seconds: 7200)
        try await container.putChunk(again)  // refreshes the mtime: a new grace period

        let report = try await container.collectGarbage(CollectionOptions(grace: .seconds(3600)))
        #expect(report.chunksExamined == 3 && report.chunksInGrace == 2 && report.chunksDeleted == 1)
        #expect(exists(fresh) && !exists(old) && exists(again))
    }

    @Test func aDryRunCountsAndChangesNothing() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        let (id, chunks, stray) = try await threeVersions(container)
        let deleted = try await container.mustPut(.random(), base: 0, fileState("gone", chunks: [stray]))
        try await container.mustDelete(deleted.id, base: deleted.version)
        let before = try await container.storageStats()
        let later = WallClock.nanoseconds() + 31 * Self.day

        let dry = try await container.collectGarbage(CollectionOptions(grace: .zero, dryRun: true, now: later))
        #expect(dry.versionsPruned == 3 && dry.tombstonesPurged == 1 && dry.chunksDeleted == 3)
        #expect(try await container.storageStats() == before)
        #expect((chunks + [stray]).allSatisfy(exists))
        #expect(try await container.history(of: id, limit: 10).count == 3)

        let real = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(real == dry)
    }

    @Test func aCommitAfterItsChunkWasCollectedIsRefusedUntilUploadedAgain() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        let chunk = rawChunk("uploaded, then collected before its commit")
        try await container.putChunk(chunk)
        #expect(try await container.collectGarbage(CollectionOptions(grace: .zero)).chunksDeleted == 1)
        let id = FileID.random()
        #expect(
            try await container.put(id, base: 0, fileState("late", chunks: [chunk])) == .chunksMissing([chunk.hash]))
        try await container.putChunk(chunk)
        let committed = try await container.mustPut(id, base: 0, fileState("late", chunks: [chunk]))
        #expect(try await container.collectGarbage(CollectionOptions(grace: .zero)).chunksDeleted == 0)
        #expect(try await container.chunk(chunk.hash) == chunk && committed.version == 1)
    }

    @Test func storageStatsCountEntriesVersionsAndBytes() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        #expect(try await container.storageStats() == StorageStats())
        let text = Array(String(repeating: "compressible ", count: 400).utf8)
        let zlib = text.withUnsafeBytes { ChunkCodec.encode($0, level: 6) }
        let raw = rawChunk("raw bytes")
        try await container.putChunk(zlib)
        try await container.putChunk(raw)
        let dir = try await container.mustPut(.random(), base: 0, directoryState("dir"))
        // Two files naming the same chunk (deduplicated), one rewritten, one deleted.
        let a = try await container.mustPut(.random(), base: 0, fileState("a", in: dir.id, chunks: [zlib]))
        try await container.mustPut(.random(), base: 0, fileState("b", in: dir.id, chunks: [zlib]))
        try await container.mustPut(a.id, base: a.version, fileState("a", in: dir.id, chunks: [zlib, raw]))
        let c = try await container.mustPut(.random(), base: 0, fileState("c", chunks: [raw]))
        try await container.mustDelete(c.id, base: c.version)

        let stats = try await container.storageStats()
        #expect(stats.liveEntries == 3 && stats.tombstones == 1 && stats.trashedEntries == 1)
        #expect(stats.keptVersions == 2)  // a's first version, c's live version
        #expect(stats.chunks == 2)
        #expect(stats.storedBytes == Int64(2 * LocalChunkFile.headerSize + zlib.payload.count + raw.payload.count))
        #expect(stats.chunkPlainBytes == Int64(text.count + raw.plainLength))
        #expect(stats.logicalBytes == Int64(2 * text.count + raw.plainLength))
        #expect(stats.deduplicationRatio! > 1.5 && stats.compressionRatio! > 5)
    }

    @Test func aStaleTemporaryFileIsRemovedAndAFreshOneKept() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try LocalContainer.openOrCreate(at: path)
        let chunk = rawChunk("a shard")
        try await container.putChunk(chunk)
        let shard = path + "/chunks/" + chunk.hash.hex.prefix(2)
        let stale = shard + "/.tmp-dead-writer"
        let fresh = shard + "/.tmp-live-writer"
        let other = shard + "/not-a-chunk"
        for file in [stale, fresh, other] { #expect(FileManager.default.createFile(atPath: file, contents: Data([1]))) }
        var times = [timespec](repeating: timespec(tv_sec: time(nil) - 2 * 86_400, tv_nsec: 0), count: 2)
        #expect(utimensat(AT_FDCWD, stale, &times, 0) == 0)
        _ = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(access(stale, F_OK) != 0 && access(fresh, F_OK) == 0 && access(other, F_OK) == 0)
    }

    @Test func anUpgradedContainerKeepsItsTrashForTheRetentionPeriodFromTheUpgrade() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A container of schema 1 (no history) with a deleted file whose chunk is still stored.
        try FileManager.default.createDirectory(atPath: path + "/chunks", withIntermediateDirectories: true)
        try Data(#"{"format":2,"id":"old-container"}"#.utf8).write(
            to: URL(fileURLWithPath: path + "/syncfs-container.json"))
        let chunk = rawChunk("deleted before history existed")
        let id = FileID.random()
        do {
            let connection = try SQLiteConnection(path: path + "/container.db")
            try SQLiteMigrations([LocalContainerSchema.migrations.steps[0]]).migrate(connection)
            let tombstone = RemoteEntry(
                id: id, version: 1, isDeleted: true, device: "old", state: fileState("old", chunks: [chunk]))
            try connection.execute("UPDATE counters SET value = 1 WHERE name = 'version'")
            let insert = try connection.statement(
                "INSERT INTO entries (\(LocalEntryRow.columns)) VALUES (?, 1, 1, 'old', ?, ?, 1, 420, 0, ?, NULL, NULL, ?)"
            )
            insert.bind(1, id.hex)
            insert.bind(2, FileID.root.hex)
            insert.bind(3, bytes: tombstone.state.name)
            insert.bind(4, tombstone.state.size)
            insert.bind(5, bytes: LocalEntryEncoding.encodeManifest(tombstone.state.manifest))
            try insert.run()
        }
        let container = try LocalContainer.openExisting(at: path)
        try await container.putChunk(chunk)
        let trash = try await container.deletedEntries(before: nil, limit: 10)
        #expect(trash.map(\.entry.id) == [id] && trash.first?.committedAt == 0)
        #expect(try await container.history(of: id, limit: 10).count == 1)

        // Its time is unknown: it counts from the upgrade, so the next collection keeps it…
        let now = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(now.tombstonesPurged == 0 && now.chunksDeleted == 0 && exists(chunk))
        // …and one 31 days later purges it.
        let later = try await container.collectGarbage(
            CollectionOptions(grace: .zero, now: WallClock.nanoseconds() + 31 * Self.day))
        #expect(later.tombstonesPurged == 1 && later.chunksDeleted == 1 && !exists(chunk))
    }
}
