import AsyncHTTPClient
import Foundation
import SyncBackend
import SyncS3
import Testing

@testable import SyncPostgres

/// Garbage collection of `PostgresContainer`: grace, dry runs, chunks shared between
/// containers (one blob store per database), commits and uploads racing a collection, and
/// sweeps that fail halfway. Against the PostgreSQL of `scripts/services.sh`.
@Suite struct PostgresCollectionTests {
    @Test func graceKeepsRecentChunksADryRunDeletesNothingAndACollectionFreesTheBlob() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "grace")
        let chunk = encodedChunk("an upload whose commit never came")
        try await container.putChunk(chunk)

        let recent = try await container.collectGarbage(CollectionOptions(grace: .seconds(3600)))
        #expect(recent.chunksExamined == 1 && recent.chunksInGrace == 1 && recent.chunksDeleted == 0, "\(recent)")
        let dry = try await container.collectGarbage(CollectionOptions(grace: .zero, dryRun: true))
        #expect(dry.chunksDeleted == 1 && dry.bytesFreed == Int64(chunk.payload.count), "\(dry)")
        #expect(try await container.chunk(chunk.hash) == chunk)

        let report = try await container.collectGarbage(CollectionOptions(grace: .zero))
        #expect(report == dry)
        #expect(try await container.missingChunks([chunk.hash]) == [chunk.hash])
        await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) {
            _ = try await fixture.blobs.get(chunk.hash)
        }
        #expect(try await fixture.value("SELECT count(*) FROM syncfs_chunks") == 0)
        #expect(try await fixture.value("SELECT count(*) FROM syncfs_sweeps") == 0)
        // It can be stored again.
        try await container.putChunk(chunk)
        #expect(try await container.chunk(chunk.hash) == chunk)
        await fixture.close(store)
    }

    @Test func aChunkSharedByTwoContainersSurvivesOneContainersCollection() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let (a, b) = (try await store.createContainer(named: "a"), try await store.createContainer(named: "b"))
        let chunk = encodedChunk("shared bytes")
        try await a.putChunk(chunk)
        try await b.putChunk(chunk)
        _ = try await mustCommit(b, put(FileID.random(), base: 0, fileState("f", [chunk])))

        let report = try await a.collectGarbage(CollectionOptions(grace: .zero))
        #expect(report.chunksDeleted == 1, "\(report)")
        #expect(try await a.missingChunks([chunk.hash]) == [chunk.hash])
        #expect(try await b.chunk(chunk.hash) == chunk)
        #expect(try await fixture.blobs.get(chunk.hash) == chunk)
        // b references it: its collection keeps it too.
        #expect(try await b.collectGarbage(CollectionOptions(grace: .zero)).chunksDeleted == 0)
        #expect(try await b.chunk(chunk.hash) == chunk)
        await fixture.close(store)
    }

    @Test func aCommitReferencingACollectedChunkIsRefusedChunksMissingUntilItIsPutAgain() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "missing")
        let chunk = encodedChunk("uploaded, then collected before its commit")
        try await container.putChunk(chunk)
        #expect(try await container.collectGarbage(CollectionOptions(grace: .zero)).chunksDeleted == 1)

        let request = put(FileID.random(), base: 0, fileState("f", [chunk]))
        #expect(try await container.commit(request) == .chunksMissing([chunk.hash]))
        // The locked path decides the same.
        let outcome = try await store.run("commit") { client in
            try await PostgresCommit.commit(
                request, container: container.rowID, client: client, logger: store.options.logger, attempts: 0)
        }
        #expect(outcome == .chunksMissing([chunk.hash]))
        try await container.putChunk(chunk)
        let entry = try await mustCommit(container, request)
        #expect(try await container.chunk(chunk.hash) == chunk)
        #expect(try await container.collectGarbage(CollectionOptions(grace: .zero)).chunksDeleted == 0)
        #expect(try await container.history(of: entry.id, limit: 1).first?.entry == entry)
        await fixture.close(store)
    }

    /// A commit whose lookup saw its chunk live, written after a collection marked the chunk
    /// "being deleted": the write's fingerprint check fails (only live chunks count) and the
    /// commit, decided again, is refused `chunksMissing`.
    @Test func aCommitLookedUpBeforeAChunkWasMarkedIsNotWrittenOverIt() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "inflight")
        let chunk = encodedChunk("marked while the commit was in flight")
        try await container.putChunk(chunk)
        let request = put(FileID.random(), base: 0, fileState("f", [chunk]))
        let key = CommitLookupKey(request, container: container.rowID)
        let fingerprint = try await store.run("look up") { client in
            var fingerprint: String?
            _ = try await CommitSnapshot.read(try await client.query(key.lookupWithFingerprint), for: key) { cells in
                fingerprint = try cells[16].decode(String?.self)
            }
            return fingerprint
        }
        // A collection marks the chunk (its sweep has not run yet).
        try await fixture.sql("UPDATE syncfs_chunks SET state = \(PostgresChunkClaim.beingDeleted)")
        guard case .put(let state) = request.change else { throw TestFailure("not a put") }
        let written = try await store.run("apply") { client in
            var version: Int64?
            for try await value in try await client.query(
                key.apply(fingerprint: fingerprint, isDeleted: false, device: "d", state: state)
            ).decode(Int64?.self) {
                version = value
            }
            return version
        }
        #expect(written == 0, "the write went through over a chunk being deleted")
        #expect(try await container.commit(request) == .chunksMissing([chunk.hash]))
        #expect(try await container.entry(request.id) == nil)
        await fixture.close(store)
    }

    @Test func aPutMeetingASweepIsRefusedAndAFailedSweepIsFinishedByTheNextCollection() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "sweep")
        let chunk = encodedChunk("swept")
        try await container.putChunk(chunk)

        // The blob store fails while the sweep deletes: the collection fails (retryable), the
        // row is gone, the sweep record stays and refuses a put of that hash.
        let marker = fixture.blobDirectory + "/" + LocalChunkBlobStore.markerName
        try FileManager.default.moveItem(atPath: marker, toPath: marker + ".away")
        let failed = await containerError { _ = try await container.collectGarbage(CollectionOptions(grace: .zero)) }
        #expect(failed?.isRetryable == true, "\(String(describing: failed))")
        try FileManager.default.moveItem(atPath: marker + ".away", toPath: marker)
        #expect(try await fixture.value("SELECT count(*) FROM syncfs_sweeps") == 1)
        #expect(try await container.missingChunks([chunk.hash]) == [chunk.hash])
        let refused = await containerError { try await container.putChunk(chunk) }
        guard case .unavailable = refused else {
            Issue.record("a put during a sweep was answered \(String(describing: refused))")
            await fixture.close(store)
            return
        }
        #expect(try await container.missingChunks([chunk.hash]) == [chunk.hash])

        // A collection after the takeover time finishes it: the blob goes, the record too.
        let later = nowNanoseconds() + PostgresChunkClaim.takeover.wholeNanoseconds * 2
        _ = try await container.collectGarbage(CollectionOptions(grace: .zero, now: later))
        #expect(try await fixture.value("SELECT count(*) FROM syncfs_sweeps") == 0)
        await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) {
            _ = try await fixture.blobs.get(chunk.hash)
        }
        try await container.putChunk(chunk)
        #expect(try await container.chunk(chunk.hash) == chunk)

        // A record whose sweep died long ago is taken over by a put.
        try await fixture.sql(
            "INSERT INTO syncfs_sweeps (hash, started_at, sweeper) VALUES ('\(encodedChunk("old").hash.hex)', 0, 1)")
        try await container.putChunk(encodedChunk("old"))
        #expect(try await container.chunk(encodedChunk("old").hash) == encodedChunk("old"))
        await fixture.close(store)
    }

    /// Two clients uploading the same new chunk at once both succeed (the second finds it live).
    @Test func concurrentPutsOfOneChunkAllSucceed() async throws {
        let fixture = try await PostgresFixture.make()
        let (one, two) = (try await fixture.open(), try await fixture.open())
        let container = try await one.createContainer(named: "twice")
        let same = try #require(try await two.container(named: "twice"))
        for round in 0..<20 {
            let chunk = encodedChunk("round \(round)")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for target in [container, same, container, same] { group.addTask { try await target.putChunk(chunk) } }
                try await group.waitForAll()
            }
            #expect(try await container.chunk(chunk.hash) == chunk)
        }
        await fixture.close(one, two)
    }

    @Test func droppingAStagedCopySweepsOnlyTheBlobsNoOtherContainerHolds() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let kept = try await store.createContainer(named: "kept")
        let staged = try await store.createContainer(named: ".syncfs-copy.x")
        let (shared, own) = (encodedChunk("shared"), encodedChunk("only the copy"))
        try await kept.putChunk(shared)
        try await staged.putChunk(shared)
        try await staged.putChunk(own)
        try await store.dropStagedContainer(named: ".syncfs-copy.x")
        #expect(try await kept.chunk(shared.hash) == shared)
        await #expect(throws: ContainerProtocolError.chunkNotFound(own.hash)) {
            _ = try await fixture.blobs.get(own.hash)
        }
        #expect(try await fixture.value("SELECT count(*) FROM syncfs_sweeps") == 0)
        await fixture.close(store)
    }

    /// Puts and collections of the same chunks at once, through two stores (two processes):
    /// whenever a row is live its blob is readable.
    @Test func aPutRacingASweepNeverLeavesALiveRowWithoutItsBlob() async throws {
        let fixture = try await PostgresFixture.make()
        let (putting, collecting) = (try await fixture.open(), try await fixture.open())
        let container = try await putting.createContainer(named: "race")
        let other = try #require(try await collecting.container(named: "race"))
        let chunks = (0..<8).map { encodedChunk("raced \($0)") }
        var deleted = 0
        for round in 0..<15 {
            async let puts: [ContainerProtocolError] = {
                var refused: [ContainerProtocolError] = []
                for chunk in chunks {
                    do throws(ContainerProtocolError) { try await container.putChunk(chunk) } catch {
                        refused.append(error)
                    }
                }
                return refused
            }()
            let report = try await other.collectGarbage(CollectionOptions(grace: .zero))
            deleted += report.chunksDeleted
            for error in await puts { #expect(error.isRetryable, "round \(round): \(error)") }
            for chunk in chunks where try await container.missingChunks([chunk.hash]).isEmpty {
                #expect(try await container.chunk(chunk.hash) == chunk, "round \(round)")
            }
        }
        #expect(deleted > 0, "no collection deleted anything: nothing raced")
        await fixture.close(putting, collecting)
    }
}

/// A collection of a container of many chunks, half of them referenced (rows made in SQL; the
/// blobs are absent, so the sweep's deletions are the blob store's idempotent no-ops): the
/// referenced half stays, the rest goes. `SYNCFS_GC_BENCH_CHUNKS` sets the size (default 20,000)
/// for the throughput figure of doc/performance-log.md, printed.
@Suite struct PostgresCollectionScaleTests {
    @Test func aCollectionOfManyChunksDeletesExactlyTheUnreferencedHalf() async throws {
        let chunks = ProcessInfo.processInfo.environment["SYNCFS_GC_BENCH_CHUNKS"].flatMap { Int($0) } ?? 20_000
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "many")
        let seeding = ContinuousClock.now
        try await fixture.sql(
            """
            INSERT INTO syncfs_chunks (container, hash, plain_length, encoding, stored_at, stored_length, state)
            SELECT \(container.rowID), encode(sha256(int8send(i)), 'hex'), 1, 0, 0, 10, 1
            FROM generate_series(1, \(chunks)) AS i
            """)
        try await fixture.sql(
            """
            INSERT INTO syncfs_entries (container, file_id, version, deleted, device, parent, name, kind, mode,
                mtime, size, manifest, committed_at)
            SELECT \(container.rowID), md5(i::text), i, false, 'bench', '\(FileID.root.hex)',
                convert_to('f' || i, 'UTF8'), 1, 420, 0, 1, sha256(int8send(2 * i)) || '\\x0100000000000000'::bytea, 1
            FROM generate_series(1, \(chunks / 2)) AS i
            """)
        try await fixture.sql("UPDATE syncfs_containers SET version = \(chunks / 2) WHERE id = \(container.rowID)")
        try await fixture.sql("ANALYZE")
        print("seeded \(chunks) chunks in \(ContinuousClock.now - seeding)")

        let started = ContinuousClock.now
        let report = try await container.collectGarbage(CollectionOptions(grace: .zero))
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        print(
            "collected \(chunks) chunks in \(elapsed): \(Int(Double(chunks) / seconds)) chunks examined/s, "
                + "\(Int(Double(report.chunksDeleted) / seconds)) deleted/s; \(report)")
        #expect(report.chunksExamined == chunks && report.chunksDeleted == chunks - chunks / 2, "\(report)")
        #expect(try await container.storageStats().chunks == chunks / 2)
        #expect(try await fixture.value("SELECT count(*) FROM syncfs_sweeps") == 0)
        let kept = try await fixture.value(
            "SELECT count(*) FROM syncfs_chunks WHERE hash = encode(sha256(int8send(2::bigint)), 'hex')")
        #expect(kept == 1)
        await fixture.close(store)
    }

    /// Unreferenced chunks in an RGW bucket: the collection deletes their blobs
    /// (`SYNCFS_GC_BENCH_S3_CHUNKS` sets how many, default 300; the rate is printed).
    @Test func aCollectionDeletesTheBlobsOfAnS3ChunkStore() async throws {
        let count = ProcessInfo.processInfo.environment["SYNCFS_GC_BENCH_S3_CHUNKS"].flatMap { Int($0) } ?? 300
        let (blobs, http) = try await makeBucket("syncfs-gc-s3")
        let fixture = try await PostgresFixture.make()
        let store = try await PostgresStore.open(settings: fixture.settings, blobs: blobs)
        let container = try await store.createContainer(named: "s3")
        let chunks = (0..<count).map { encodedChunk("unreferenced \($0)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    for index in stride(from: lane, to: chunks.count, by: 16) {
                        try await container.putChunk(chunks[index])
                    }
                }
            }
            try await group.waitForAll()
        }
        let started = ContinuousClock.now
        let report = try await container.collectGarbage(CollectionOptions(grace: .zero))
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        print("collected \(count) chunks on RGW in \(elapsed): \(Int(Double(count) / seconds)) blobs deleted/s")
        #expect(report.chunksDeleted == count, "\(report)")
        for chunk in [chunks[0], chunks[count / 2], chunks[count - 1]] {
            await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) {
                _ = try await blobs.get(chunk.hash)
            }
        }
        await fixture.close(store)
        try await http.shutdown()
    }
}
