import Testing

@testable import SyncBackend

/// The `CollectableContainer` contract (retention, garbage collection, storage figures), checked
/// against every implementation that can be collected. What only the local container does
/// (chunk file times, temporary files, upgrades) is in LocalCollectionTests.swift; collections
/// concurrent with commits in LocalCollectionConcurrencyTests.swift.
// Every kind that stores its own data (an HTTP client of a server is collected on the server).
private let collectableKinds: [ContainerKind] = [.inMemory, .local, .postgres, .postgresS3]

@Suite("Container collection conformance")
struct ContainerCollectionConformanceTests {
    static let day = RetentionPolicy.nanosecondsPerDay

    typealias Collectable = Container & ContainerHistory & CollectableContainer

    static func collectable(_ fixture: ContainerFixture) throws -> any Collectable {
        try #require(fixture.container as? any Collectable)
    }

    /// Whether the container holds each of `chunks`, in order.
    private func held(_ container: any Container, _ chunks: [EncodedChunk]) async throws -> [Bool] {
        let missing = Set(try await container.missingChunks(chunks.map(\.hash)))
        return chunks.map { !missing.contains($0.hash) }
    }

    /// A file written three times (chunks a, b, c), and a stray chunk nobody names.
    private func threeVersions(_ container: any Container) async throws
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

    @Test(arguments: collectableKinds)
    func versionsArePrunedByAge(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = try Self.collectable(fixture)
        #expect(try await container.retention() == RetentionPolicy())
        let (id, chunks, stray) = try await threeVersions(container)

        // Within 30 days: every version and its chunks stay; only the stray chunk goes.
        let first = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(first.versionsPruned == 0 && first.chunksExamined == 4 && first.chunksDeleted == 1)
        #expect(first.bytesFreed >= Int64(stray.payload.count))
        #expect(try await held(container, [stray] + chunks) == [false, true, true, true])
        #expect(try await container.history(of: id, limit: 10).count == 3)

        // 31 days later the superseded versions and their chunks go; the current one stays.
        let later = WallClock.nanoseconds() + 31 * Self.day
        let second = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(second.versionsPruned == 2 && second.chunksDeleted == 2 && second.chunksExamined == 3)
        #expect(try await held(container, chunks) == [false, false, true])
        #expect(
            try await container.history(of: id, limit: 10).map(\.entry.state.manifest.first?.hash) == [chunks[2].hash])
        #expect(try await container.chunk(chunks[2].hash) == chunks[2])
    }

    @Test(arguments: collectableKinds)
    func versionsArePrunedByCount(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = try Self.collectable(fixture)
        try await container.setRetention(RetentionPolicy(days: 0, versions: 1))
        #expect(try await container.retention() == RetentionPolicy(days: 0, versions: 1))
        let (id, chunks, _) = try await threeVersions(container)

        let report = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(report.versionsPruned == 1 && report.chunksDeleted == 2)  // version a and the stray chunk
        #expect(try await held(container, chunks) == [false, true, true])
        #expect(try await container.history(of: id, limit: 10).count == 2)

        // An explicit policy overrides the stored one for one collection.
        let none = try await container.collectGarbage(
            CollectionOptions(retention: RetentionPolicy(days: 0, versions: 0), grace: .zero))
        #expect(none.versionsPruned == 1)
        #expect(try await held(container, chunks) == [false, false, true])
        // A bad policy is refused, stored or given.
        #expect(
            await protocolError { try await container.setRetention(RetentionPolicy(days: -1)) }?.isInvalidRequest
                == true)
        #expect(
            await protocolError {
                _ = try await container.collectGarbage(CollectionOptions(retention: RetentionPolicy(versions: 200_000)))
            }?.isInvalidRequest == true)
    }

    @Test(arguments: collectableKinds)
    func aChunkOnlyATombstoneOrAKeptVersionNamesSurvivesUntilItsRetentionEnds(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = try Self.collectable(fixture)
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
        #expect(try await held(container, [trashed, old]) == [true, true])

        let later = WallClock.nanoseconds() + 30 * Self.day + 1
        let purged = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(purged.tombstonesPurged == 1 && purged.versionsPruned == 2 && purged.chunksDeleted == 2)
        #expect(try await held(container, [trashed, old, current]) == [false, false, true])
        // Out of the trash and the history, still in the feed as a tombstone.
        #expect(try await container.deletedEntries(before: nil, limit: 10).isEmpty)
        #expect(try await container.history(of: deleted.id, limit: 10).isEmpty)
        #expect(try await container.entry(deleted.id) == tombstone)
        let stats = try await container.storageStats()
        #expect(stats.tombstones == 1 && stats.trashedEntries == 0 && stats.keptVersions == 0)
    }

    @Test(arguments: collectableKinds)
    func aChunkStoredWithinTheGracePeriodIsKept(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = try Self.collectable(fixture)
        let fresh = rawChunk("an upload whose commit has not come yet")
        try await container.putChunk(fresh)
        let report = try await container.collectGarbage(CollectionOptions())
        #expect(report.chunksExamined == 1 && report.chunksInGrace == 1 && report.chunksDeleted == 0)
        #expect(try await held(container, [fresh]) == [true])
        #expect(try await container.collectGarbage(CollectionOptions(grace: .zero)).chunksDeleted == 1)
        #expect(try await held(container, [fresh]) == [false])
    }

    @Test(arguments: collectableKinds)
    func aDryRunCountsAndChangesNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = try Self.collectable(fixture)
        let (id, chunks, stray) = try await threeVersions(container)
        let deleted = try await container.mustPut(.random(), base: 0, fileState("gone", chunks: [stray]))
        try await container.mustDelete(deleted.id, base: deleted.version)
        let before = try await container.storageStats()
        let later = WallClock.nanoseconds() + 31 * Self.day

        let dry = try await container.collectGarbage(CollectionOptions(grace: .zero, dryRun: true, now: later))
        #expect(dry.versionsPruned == 3 && dry.tombstonesPurged == 1 && dry.chunksDeleted == 3)
        #expect(try await container.storageStats() == before)
        #expect(try await held(container, chunks + [stray]) == [true, true, true, true])
        #expect(try await container.history(of: id, limit: 10).count == 3)

        let real = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(real == dry)
    }

    @Test(arguments: collectableKinds)
    func aCommitAfterItsChunkWasCollectedIsRefusedUntilUploadedAgain(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = try Self.collectable(fixture)
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

    @Test(arguments: collectableKinds)
    func storageStatsCountEntriesVersionsAndBytes(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = try Self.collectable(fixture)
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
        // Stored bytes: the encoded payloads, plus whatever a store adds per chunk (a header).
        let payloads = Int64(zlib.payload.count + raw.payload.count)
        #expect(stats.storedBytes >= payloads && stats.storedBytes <= payloads + 2 * 64)
        #expect(stats.chunkPlainBytes == Int64(text.count + raw.plainLength))
        #expect(stats.logicalBytes == Int64(2 * text.count + raw.plainLength))
        #expect(stats.deduplicationRatio! > 1.5 && stats.compressionRatio! > 5)
    }
}
