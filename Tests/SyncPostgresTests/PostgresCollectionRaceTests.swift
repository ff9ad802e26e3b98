import AsyncHTTPClient
import Foundation
import SyncBackend
import SyncS3
import Synchronization
import TestSupport
import Testing

@testable import SyncPostgres

/// The randomized garbage-collection test: on PostgreSQL + S3 (Ceph RGW of `scripts/services.sh`), several
/// tasks commit (creates, rewrites sharing chunks, deletes, restores of old states on
/// tombstones) through one store while two collections with grace 0 and a short retention run
/// at once, through that store and another (two processes); a commit refused `chunksMissing` uploads again and retries.
/// At the end every version `history` and `deletedEntries` list reads back byte for byte.
/// Seeded: the seed is printed, `SYNCFS_TEST_SEED` replays one.
@Suite struct PostgresCollectionRaceTests {
    static let workers = 4
    static let filesPerWorker = 3
    static let stepsPerWorker = 60

    @Test func commitsDeletesRestoresAndCollectionsAtOnceLoseNoKeptVersion() async throws {
        let seed =
            ProcessInfo.processInfo.environment["SYNCFS_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("PostgresCollectionRaceTests seed: \(seed) (replay with SYNCFS_TEST_SEED=\(seed))")
        let (blobs, http) = try await makeBucket("syncfs-gc-race")
        let fixture = try await PostgresFixture.make()
        let committing = try await PostgresStore.open(settings: fixture.settings, blobs: blobs)
        let collecting = try await PostgresStore.open(settings: fixture.settings, blobs: blobs)
        let container = try await committing.createContainer(named: "race")
        let collected = try #require(try await collecting.container(named: "race"))
        // Keep the last 2 superseded versions; a tombstone leaves the trash at the next
        // collection: pruning frees chunks while commits and restores reference them.
        try await container.setRetention(RetentionPolicy(days: 0, versions: 2))

        let contents = Contents(seed: seed)
        let shared = Shared()
        // Two collectors, one through each store: collections race each other too.
        let collector = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for target in [collected, container] {
                    group.addTask {
                        var count = 0
                        while !shared.done.load(ordering: .acquiring) {
                            let report = try await target.collectGarbage(
                                CollectionOptions(retention: RetentionPolicy(days: 0, versions: 2), grace: .zero))
                            shared.totals.withLock { $0.add(report) }
                            count += 1
                        }
                        return count
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        var retries = 0
        do {
            retries = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<Self.workers {
                    group.addTask {
                        var worker = Worker(
                            container: container, contents: contents,
                            generator: SeededGenerator(seed: seed &+ UInt64(worker) &* 0x9E37_79B9), name: "w\(worker)")
                        try await worker.run(steps: Self.stepsPerWorker, files: Self.filesPerWorker)
                        return worker.retries
                    }
                }
                return try await group.reduce(0, +)
            }
        } catch {
            shared.done.store(true, ordering: .releasing)
            _ = await collector.result
            throw error
        }
        shared.done.store(true, ordering: .releasing)
        let collections = try await collector.value
        let total = shared.totals.withLock { $0 }
        print("seed \(seed): \(collections) collections, \(retries) uploads again after chunksMissing, \(total)")

        // Every kept version reads back byte for byte.
        var checked = 0
        for id in contents.ids {
            for version in try await container.history(of: id, limit: 1000) {
                try await contents.check(version.entry, in: container)
                checked += 1
            }
        }
        for version in try await container.deletedEntries(before: nil, limit: 1000) {
            try await contents.check(version.entry, in: container)
        }
        #expect(checked >= Self.workers * Self.filesPerWorker)
        #expect(total.chunksDeleted > 0, "the collections deleted nothing: nothing raced")
        #expect(collections > 1)
        await fixture.close(committing, collecting)
        try await http.shutdown()
    }
}

/// A fresh RGW bucket of `scripts/services.sh` as a chunk store, and the HTTP client to shut down.
func makeBucket(_ prefix: String) async throws -> (S3ChunkBlobStore, HTTPClient) {
    let services = try ServicesEnvironment.require(.postgres, .s3)
    let http = AsyncHTTPClientTransport.makeHTTPClient()
    let bucket = "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    let blobs = S3ChunkBlobStore(
        client: S3ChunkBlobStore.client(
            location: try S3Location(
                parsing: "s3://\(bucket)/run?endpoint=\(services.s3Endpoint)&region=\(services.s3Region)"),
            credentials: S3Credentials(
                accessKeyID: services.s3AccessKeyID, secretAccessKey: services.s3SecretAccessKey),
            transport: AsyncHTTPClientTransport(client: http)))
    do {
        try await blobs.client.createBucket()
    } catch {
        try? await http.shutdown()
        throw error
    }
    return (blobs, http)
}

/// What the collector and the test share.
private final class Shared: Sendable {
    let done = Atomic<Bool>(false)
    let totals = Mutex(CollectionReport())
}

extension CollectionReport {
    mutating func add(_ other: CollectionReport) {
        versionsPruned += other.versionsPruned
        tombstonesPurged += other.tombstonesPurged
        chunksDeleted += other.chunksDeleted
        chunksInGrace += other.chunksInGrace
        chunksRevived += other.chunksRevived
    }
}

/// Every chunk any worker made, by hash, and every file ID used.
private final class Contents: Sendable {
    /// Chunks shared between files and workers.
    let pool: [EncodedChunk]
    private let made = Mutex<[ChunkHash: [UInt8]]>([:])
    private let files = Mutex<[FileID]>([])

    init(seed: UInt64) {
        var generator = SeededGenerator(seed: seed ^ 0x5EED)
        pool = (0..<24).map { index in
            encodedChunk((0..<(200 + generator.below(1800))).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        }
        made.withLock { made in for (chunk, index) in zip(pool, pool.indices) { made[chunk.hash] = plain(index) } }
    }

    private func plain(_ index: Int) -> [UInt8] { (try? ChunkCodec.decode(pool[index])) ?? [] }

    func remember(_ chunk: EncodedChunk) {
        let bytes = (try? ChunkCodec.decode(chunk)) ?? []
        made.withLock { $0[chunk.hash] = bytes }
    }

    func add(_ id: FileID) { files.withLock { $0.append(id) } }
    var ids: [FileID] { files.withLock { $0 } }

    /// The chunk of `hash` to upload again.
    func chunk(_ hash: ChunkHash) throws -> EncodedChunk {
        guard let bytes = made.withLock({ $0[hash] }) else { throw TestFailure("unknown chunk \(hash)") }
        return encodedChunk(bytes)
    }

    /// Every chunk of `entry` reads back from `container` as the bytes it was made of.
    func check(_ entry: RemoteEntry, in container: PostgresContainer) async throws {
        for reference in entry.state.manifest {
            let stored = try await container.chunk(reference.hash)
            let bytes = try ChunkCodec.decode(stored)
            #expect(bytes == made.withLock { $0[reference.hash] }, "\(entry.id) v\(entry.version)")
            #expect(Int64(bytes.count) == reference.length)
        }
    }
}

/// One committing task: its own files, random steps.
private struct Worker {
    let container: PostgresContainer
    let contents: Contents
    var generator: SeededGenerator
    let name: String
    var retries = 0
    var serial = 0

    mutating func run(steps: Int, files: Int) async throws {
        var current: [FileID: RemoteEntry] = [:]
        let ids = (0..<files).map { _ in FileID.random() }
        for id in ids { contents.add(id) }
        for _ in 0..<steps {
            let id = ids[generator.below(ids.count)]
            guard let entry = current[id] else {
                current[id] = try await store(id, base: 0, chunks: newContent())
                continue
            }
            if entry.isDeleted {
                // Restore: an old state from the history, else new content.
                let old = try await container.history(of: id, limit: 10).filter { !$0.entry.isDeleted }
                if let pick = old.isEmpty ? nil : old[generator.below(old.count)] {
                    current[id] = try await commit(put(id, base: entry.version, pick.entry.state))
                } else {
                    current[id] = try await store(id, base: entry.version, chunks: newContent())
                }
                continue
            }
            switch generator.below(4) {
            case 0: current[id] = try await commit(deletion(entry))
            default: current[id] = try await store(id, base: entry.version, chunks: newContent())
            }
        }
    }

    /// One chunk of this version alone, and up to two of the shared pool.
    private mutating func newContent() -> [EncodedChunk] {
        serial += 1
        let own = encodedChunk(Array("\(name) \(serial) \(generator.next())".utf8))
        contents.remember(own)
        return [own] + (0..<generator.below(3)).map { _ in contents.pool[generator.below(contents.pool.count)] }
    }

    private mutating func store(_ id: FileID, base: EntryVersion, chunks: [EncodedChunk]) async throws -> RemoteEntry {
        let missing = Set(try await container.missingChunks(chunks.map(\.hash)))
        for chunk in chunks where missing.contains(chunk.hash) { try await putAgainUntilStored(chunk) }
        return try await commit(put(id, base: base, fileState("f-\(id.hex.prefix(6))", chunks)))
    }

    /// Commits `request`; a `chunksMissing` answer uploads those chunks again and retries.
    private mutating func commit(_ request: CommitRequest) async throws -> RemoteEntry {
        for _ in 0..<50 {
            switch try await container.commit(request) {
            case .committed(let entry): return entry
            case .chunksMissing(let hashes):
                retries += 1
                for hash in hashes { try await putAgainUntilStored(try contents.chunk(hash)) }
            case let other: throw TestFailure("\(name): \(request.id) refused \(other)")
            }
        }
        throw TestFailure("\(name): \(request.id) never committed")
    }

    /// `putChunk`, retried while it is refused for a sweep in progress (`unavailable`).
    private func putAgainUntilStored(_ chunk: EncodedChunk) async throws {
        for _ in 0..<200 {
            do throws(ContainerProtocolError) {
                try await container.putChunk(chunk)
                return
            } catch .unavailable {
                try await Task.sleep(for: .milliseconds(10))  // scenario: a client retrying after `unavailable`
            }
        }
        throw TestFailure("\(name): chunk \(chunk.hash) was never stored")
    }
}
