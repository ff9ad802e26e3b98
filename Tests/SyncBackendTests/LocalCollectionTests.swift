import Foundation
import Glibc
import SQLiteSupport
import TestSupport
import Testing

@testable import SyncBackend

/// What only the local container's collection does (`LocalCollector`): chunk file times (a put
/// refreshes them), temporary files, and the trash of a container upgraded from before history.
/// The contract shared with every collectable container: ContainerCollectionConformanceTests.swift.
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
