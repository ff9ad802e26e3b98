import Foundation
import Synchronization
import TestSupport
import Testing

@testable import SyncBackend

/// The garbage collection's safety under concurrent commits: several instances of one local
/// container (as several processes) create, rewrite (sharing chunks), delete and restore files
/// while collections with no grace period run; a commit refused with `chunksMissing` uploads its
/// chunks again and retries, as the client does. At the end every version the history still
/// lists (entries' versions and the trash) must read back byte for byte. Two collectors run at
/// once, with the container's policy or a hard one (0 days, 0-6 versions), grace 0 or 2 ms.
///
/// Seeded (`SYNCFS_GC_SEED`, decimal or 0x-hex, replays a run; the seed is printed).
@Suite("LocalContainer collection under concurrent commits")
struct LocalCollectionConcurrencyTests {
    static let workers = 4
    static let filesPerWorker = 6
    static let operationsPerWorker = 600

    /// The contents every file is made of: blocks shared between files and versions.
    struct Pool: Sendable {
        let chunks: [ChunkHash: EncodedChunk]
        let plain: [ChunkHash: [UInt8]]
        let hashes: [ChunkHash]

        init(generator: inout SeededGenerator) {
            var chunks: [ChunkHash: EncodedChunk] = [:]
            var plain: [ChunkHash: [UInt8]] = [:]
            for index in 0..<32 {
                // Half compressible (zlib-encoded), half not (raw).
                let bytes =
                    index % 2 == 0
                    ? generator.bytes(generator.int(1...4096))
                    : Array(repeating: UInt8(index), count: generator.int(1...8192))
                let chunk = index % 2 == 0 ? rawChunk(bytes) : bytes.withUnsafeBytes { ChunkCodec.encode($0) }
                chunks[chunk.hash] = chunk
                plain[chunk.hash] = bytes
            }
            self.chunks = chunks
            self.plain = plain
            self.hashes = chunks.keys.sorted()
        }

        func state(_ name: String, generator: inout SeededGenerator) -> EntryState {
            let picked = (0..<generator.int(1...3)).map { _ in generator.pick(hashes) }
            let manifest = picked.map { ChunkRef(hash: $0, length: Int64(plain[$0]!.count)) }
            return EntryState(
                parent: .root, name: Array(name.utf8), kind: .file, mode: 0o644, mtime: Int64(generator.below(1 << 30)),
                size: manifest.reduce(0) { $0 + $1.length }, manifest: manifest)
        }
    }

    struct Counts: Sendable {
        var commits = 0
        var refusedMissing = 0
        var collections = 0
        var report = CollectionReport()
    }

    /// What the tasks share: the counts and how many workers still run.
    final class Tally: Sendable {
        let counts = Mutex(Counts())
        let running = Atomic<Int>(LocalCollectionConcurrencyTests.workers)
    }

    @Test func everyVersionInsideRetentionReadsBackAfterConcurrentCommitsAndCollections() async throws {
        let seed = SeededGenerator.seed(env: "SYNCFS_GC_SEED", default: UInt64.random(in: 1...UInt64.max))
        print("LocalCollectionConcurrencyTests seed: \(seed) (replay with SYNCFS_GC_SEED=\(seed))")
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/container"
        var generator = SeededGenerator(seed: seed)
        let pool = Pool(generator: &generator)
        _ = try LocalContainer.openOrCreate(at: path)
        let tally = Tally()

        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<Self.workers {
                let workerSeed = seed &+ UInt64(worker + 1) &* 0x9E37_79B9_7F4A_7C15
                group.addTask {
                    defer { tally.running.subtract(1, ordering: .relaxed) }
                    let container = try LocalContainer.openOrCreate(at: path)
                    try await Self.work(worker, container: container, pool: pool, seed: workerSeed, counts: tally)
                }
            }
            // Two collectors, as two `container gc` processes (or a server's schedule and a person).
            for index in 0..<2 {
                group.addTask {
                    let collector = try LocalContainer.openOrCreate(at: path)
                    var generator = SeededGenerator(seed: seed ^ (0xC011_EC70 &+ UInt64(index)))
                    while tally.running.load(ordering: .relaxed) > 0 {
                        let options = CollectionOptions(
                            retention: generator.chance(0.7)
                                ? nil : RetentionPolicy(days: 0, versions: generator.int(0...6)),
                            grace: generator.chance(0.7) ? .zero : .milliseconds(2), dryRun: generator.chance(0.1))
                        let report = try await collector.collectGarbage(options)
                        // A pause, as between scheduled runs (with no grace period, back-to-back
                        // collections could take a re-uploaded chunk before every retry).
                        try await Task.sleep(for: .milliseconds(generator.int(0...2)))
                        tally.counts.withLock { counts in
                            counts.collections += 1
                            if !options.dryRun { counts.report.add(report) }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }

        let reader = try LocalContainer.openOrCreate(at: path)
        let summary = tally.counts.withLock { $0 }
        print(
            "LocalCollectionConcurrencyTests: \(summary.commits) commits, \(summary.refusedMissing) refused chunksMissing, "
                + "\(summary.collections) collections: \(summary.report)")
        #expect(summary.commits >= Self.workers * Self.operationsPerWorker)
        #expect(summary.report.chunksDeleted > 0, "the collections deleted nothing: nothing was tested")
        #expect(summary.report.versionsPruned > 0)
        let checked = try await Self.checkEverythingKept(in: reader, pool: pool)
        // A last collection that prunes hard: what it keeps must read back too.
        let last = try await reader.collectGarbage(
            CollectionOptions(retention: RetentionPolicy(days: 0, versions: 1), grace: .zero))
        let checkedAfter = try await Self.checkEverythingKept(in: reader, pool: pool)
        print(
            "LocalCollectionConcurrencyTests: \(checked) chunk references of kept versions read back, "
                + "\(checkedAfter) after a last collection \(last)")
        #expect(checked >= checkedAfter && checkedAfter > 0)
    }

    /// Reads back every version the history lists (each file's, and the trash); the number of
    /// chunk references read.
    static func checkEverythingKept(in reader: LocalContainer, pool: Pool) async throws -> Int {
        var checked = 0
        for worker in 0..<Self.workers {
            for file in 0..<Self.filesPerWorker {
                let id = Self.fileID(worker: worker, file: file)
                let versions = try await reader.history(of: id, limit: HistoryPage.limits.upperBound)
                if let current = try await reader.entry(id), !current.isDeleted {
                    #expect(versions.first?.entry == current, "the current version is listed first")
                }
                for version in versions { checked += try await Self.readBack(version.entry, from: reader, pool: pool) }
            }
        }
        var before: EntryVersion?
        while true {
            let page = try await reader.deletedEntries(before: before, limit: 7)
            for tombstone in page { checked += try await Self.readBack(tombstone.entry, from: reader, pool: pool) }
            guard let oldest = page.last else { break }
            before = oldest.entry.version
        }
        return checked
    }

    static func fileID(worker: Int, file: Int) -> FileID {
        FileID(hex: String(format: "%016x%016x", worker + 1, file + 1))!
    }

    /// One client: its own files, in random order, each change uploaded first.
    static func work(
        _ worker: Int, container: LocalContainer, pool: Pool, seed: UInt64, counts tally: Tally
    ) async throws {
        var generator = SeededGenerator(seed: seed)
        var current: [FileID: RemoteEntry] = [:]
        for _ in 0..<operationsPerWorker {
            let file = generator.below(filesPerWorker)
            let id = fileID(worker: worker, file: file)
            let name = "w\(worker)-f\(file)"
            let change: CommitRequest.Change
            var base: EntryVersion = 0
            if let entry = current[id] {
                base = entry.version
                switch (entry.isDeleted, generator.weighted([4, 2, 2])) {
                case (false, 0): change = .put(pool.state(name, generator: &generator))
                case (false, 1): change = .delete
                default:
                    // A restore: an older state from the history (or the tombstone's own) as a new change.
                    let history = try await container.history(of: id, limit: 50).filter { !$0.entry.isDeleted }
                    change = .put(history.isEmpty ? entry.state : generator.pick(history).entry.state)
                }
            } else {
                change = .put(pool.state(name, generator: &generator))
            }
            if case .put(let state) = change {
                let hashes = state.manifest.map(\.hash)
                // As the client: upload what is missing (sometimes everything: a put refreshes).
                let upload = generator.chance(0.3) ? hashes : try await container.missingChunks(hashes)
                for hash in upload { try await container.putChunk(pool.chunks[hash]!) }
            }
            current[id] = try await commit(
                CommitRequest(id: id, baseVersion: base, change: change, device: "worker-\(worker)"),
                to: container, pool: pool, counts: tally)
        }
    }

    /// Commits `request`, uploading again what a collection took meanwhile (`chunksMissing`).
    static func commit(
        _ request: CommitRequest, to container: LocalContainer, pool: Pool, counts tally: Tally
    ) async throws -> RemoteEntry {
        for _ in 0..<1_000 {
            switch try await container.commit(request) {
            case .committed(let entry):
                tally.counts.withLock { $0.commits += 1 }
                return entry
            case .chunksMissing(let hashes):
                tally.counts.withLock { $0.refusedMissing += 1 }
                for hash in hashes { try await container.putChunk(pool.chunks[hash]!) }
            case let outcome:
                throw UnexpectedOutcome(outcome: outcome)
            }
        }
        throw TestSetupFailure("a commit was refused chunksMissing 1,000 times in a row")
    }

    /// Reads every chunk of `entry` and checks it against the pool; the number of chunks read.
    static func readBack(_ entry: RemoteEntry, from container: LocalContainer, pool: Pool) async throws -> Int {
        var content: [UInt8] = []
        for ref in entry.state.manifest {
            let chunk = try await container.chunk(ref.hash)
            let plain = try ChunkCodec.decode(chunk)  // checks the length and the SHA-256
            #expect(plain == pool.plain[ref.hash], "version \(entry.version) of \(entry.id): chunk \(ref.hash)")
            content += plain
        }
        #expect(Int64(content.count) == entry.state.size)
        return entry.state.manifest.count
    }
}

extension CollectionReport {
    mutating func add(_ other: CollectionReport) {
        versionsPruned += other.versionsPruned
        tombstonesPurged += other.tombstonesPurged
        chunksExamined += other.chunksExamined
        chunksDeleted += other.chunksDeleted
        bytesFreed += other.bytesFreed
        chunksInGrace += other.chunksInGrace
        chunksRevived += other.chunksRevived
    }
}
