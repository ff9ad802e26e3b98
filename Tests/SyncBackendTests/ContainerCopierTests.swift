import Foundation
import SyncBackend
import SyncPostgres
import Synchronization
import TestSupport
import Testing

/// `ContainerCopier` (`syncfs-mount container copy`): the copy holds every entry with its ID,
/// version and device, the feed in the same order and every chunk; damaged chunks are never
/// copied; a second run resumes; a source that changes meanwhile is refused. Local to local and
/// local to PostgreSQL (the real server of the test services).
@Suite struct ContainerCopierTests {
    enum Destination: String, CaseIterable, Sendable { case local, postgres }

    /// A local source with a folder, files of several chunks, a symlink, a rename, a delete and
    /// an entry brought back from its tombstone.
    private func makeSource() async throws -> (LocalContainer, [EncodedChunk]) {
        let source = try LocalContainer.openOrCreate(at: try makeTemporaryDirectory() + "/source")
        let chunks = (0..<5).map { rawChunk("chunk \($0) " + String(repeating: "x", count: $0 * 1000)) }
        for chunk in chunks { try await source.putChunk(chunk) }
        let folder = FileID.random()
        let file = FileID.random()
        let gone = FileID.random()
        let back = FileID.random()
        try await source.mustPut(folder, base: 0, directoryState("docs"))
        let made = try await source.mustPut(file, base: 0, fileState("a.bin", in: folder, chunks: Array(chunks[0..<3])))
        try await source.mustPut(FileID.random(), base: 0, symlinkState("link", target: "docs/a.bin"))
        let doomed = try await source.mustPut(gone, base: 0, fileState("gone", chunks: [chunks[3]]))
        try await source.mustDelete(gone, base: doomed.version)
        try await source.mustPut(file, base: made.version, fileState("renamed.bin", chunks: Array(chunks[0..<3])))
        let first = try await source.mustPut(back, base: 0, fileState("back", chunks: [chunks[4]]))
        let tombstone = try await source.mustDelete(back, base: first.version)
        try await source.mustPut(back, base: tombstone.version, fileState("back", chunks: [chunks[4]]))
        return (source, chunks)
    }

    private func makeDestination(_ kind: Destination, id: String) async throws -> any ImportableContainer {
        switch kind {
        case .local: return try LocalContainer.openOrCreate(at: try makeTemporaryDirectory() + "/copy", id: id)
        case .postgres:
            return try await SharedPostgresStore.store().createContainer(
                named: "copy-" + UUID().uuidString, id: UUID().uuidString.lowercased())
        }
    }

    private func feed(_ container: any Container) async throws -> [RemoteEntry] {
        var all: [RemoteEntry] = []
        var cursor = FeedCursor.beginning
        while true {
            let batch = try await container.changes(after: cursor, limit: 2)
            all += batch.entries
            cursor = batch.cursor
            if !batch.moreComing { return all }
        }
    }

    @Test(arguments: Destination.allCases)
    func theCopyHoldsEveryEntryVersionAndChunk(_ kind: Destination) async throws {
        let (source, chunks) = try await makeSource()
        let destination = try await makeDestination(kind, id: source.containerID)
        let report = try await ContainerCopier.copy(from: source, to: destination)
        let original = try await feed(source)
        #expect(try await feed(destination) == original)
        #expect(report.entries == original.count && report.version == original.last?.version)
        #expect(report.chunksCopied == chunks.count && report.chunksPresent == 0)
        for chunk in chunks { #expect(try await destination.chunk(chunk.hash) == chunk) }
        for entry in original { #expect(try await destination.entry(entry.id) == entry) }
        // The counter follows: the next commit on the copy takes the version after the source's.
        let next = try await destination.mustPut(FileID.random(), base: 0, directoryState("new"))
        #expect(next.version == (original.last?.version ?? 0) + 1)
        // Against the copy, a cursor of the source stays valid.
        let cursor = FeedCursor(token: String(original[2].version))
        #expect(try await destination.changes(after: cursor, limit: 100).entries.dropLast() == original.dropFirst(3))
    }

    @Test func aSecondRunResumesWithoutCopyingChunksAgain() async throws {
        let (source, chunks) = try await makeSource()
        let destination = try await makeDestination(.local, id: source.containerID)
        _ = try await ContainerCopier.copy(from: source, to: destination)
        let again = try await ContainerCopier.copy(from: source, to: destination)
        #expect(again.chunksCopied == 0 && again.chunksPresent == chunks.count && again.bytesCopied == 0)
        #expect(try await feed(destination) == (try await feed(source)))
    }

    @Test func aDamagedChunkIsNeverCopied() async throws {
        let (source, chunks) = try await makeSource()
        // Flip the last payload byte of one chunk file on disk (its header stays intact).
        let hex = chunks[1].hash.hex
        let path = source.path + "/chunks/\(hex.prefix(2))/\(hex)"
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count - 1] ^= 0xff
        try bytes.write(to: URL(fileURLWithPath: path))
        let destination = try await makeDestination(.local, id: source.containerID)
        await #expect(throws: ContainerCopyError.damagedChunk(chunks[1].hash, "its bytes do not match its hash")) {
            _ = try await ContainerCopier.copy(from: source, to: destination)
        }
        #expect(try await destination.missingChunks([chunks[1].hash]) == [chunks[1].hash])
        #expect(try await feed(destination).isEmpty)
    }

    /// Sealed chunks (a client's ciphertext, named by a MAC the copier cannot check) are copied
    /// byte for byte; one whose payload is not its length is damaged and never copied.
    @Test(arguments: Destination.allCases)
    func sealedChunksAreCopiedAsTheyAre(_ kind: Destination) async throws {
        let source = try LocalContainer.openOrCreate(at: try makeTemporaryDirectory() + "/source")
        let sealed = [
            ContainerSealedChunkConformanceTests.sealedChunk(5_000, seed: 11),
            ContainerSealedChunkConformanceTests.sealedChunk(20, seed: 12),
        ]
        try await source.putChunks(sealed)
        let file = try await source.mustPut(.random(), base: 0, fileState("sealed", chunks: sealed))
        let destination = try await makeDestination(kind, id: source.containerID)
        let report = try await ContainerCopier.copy(from: source, to: destination)
        #expect(report.chunksCopied == sealed.count)
        for chunk in sealed { #expect(try await destination.chunk(chunk.hash) == chunk) }
        #expect(try await destination.entry(file.id) == file)

        // A sealed chunk file cut short on disk: its payload is no longer its length.
        let damaged = ContainerSealedChunkConformanceTests.sealedChunk(300, seed: 13)
        try await source.putChunk(damaged)
        try await source.mustPut(.random(), base: 0, fileState("damaged", chunks: [damaged]))
        let hex = damaged.hash.hex
        let path = source.path + "/chunks/\(hex.prefix(2))/\(hex)"
        let bytes = try #require(FileManager.default.contents(atPath: path))
        try bytes.dropLast().write(to: URL(fileURLWithPath: path))
        let second = try await makeDestination(.local, id: source.containerID)
        await #expect(throws: ContainerCopyError.damagedChunk(damaged.hash, "its sealed payload is not its length")) {
            _ = try await ContainerCopier.copy(from: source, to: second)
        }
        #expect(try await second.missingChunks([damaged.hash]) == [damaged.hash])
    }

    @Test func aSourceThatChangesDuringTheCopyIsRefused() async throws {
        let (source, _) = try await makeSource()
        let destination = try await makeDestination(.local, id: source.containerID)
        let committed = Mutex(false)
        let changing = WrappedSource(base: source) { batch in
            if !committed.withLock({ done in
                defer { done = true }
                return done
            }) {
                _ = try await source.commit(
                    CommitRequest(
                        id: FileID.random(), baseVersion: 0, change: .put(directoryState("late")), device: "d"))
            }
            return batch
        }
        await #expect(throws: ContainerCopyError.sourceChanged) {
            _ = try await ContainerCopier.copy(from: changing, to: destination)
        }
    }

    /// A hostile or damaged source: a name with a slash, or versions out of order, is never
    /// imported (the import bypasses the commit rules).
    @Test func anEntryBreakingTheRulesIsNeverCopied() async throws {
        let (source, _) = try await makeSource()
        let damages: [@Sendable (inout [RemoteEntry]) -> Void] = [
            { entries in entries[1].state.name = Array("a/b".utf8) },
            { entries in entries[2].version = entries[1].version },
        ]
        for damage in damages {
            let destination = try await makeDestination(.local, id: source.containerID)
            let hostile = WrappedSource(base: source) { batch in
                var damaged = batch
                if damaged.entries.count > 2 { damage(&damaged.entries) }
                return damaged
            }
            await #expect(throws: ContainerCopyError.self) {
                _ = try await ContainerCopier.copy(from: hostile, to: destination)
            }
            #expect(try await feed(destination).isEmpty)
        }
    }
}

/// `base` with each change page passed through `rewrite` (a source that changes during a copy,
/// or serves damaged entries).
private final class WrappedSource: Container {
    let base: LocalContainer
    let rewrite: @Sendable (ChangeBatch) async throws -> ChangeBatch
    init(base: LocalContainer, rewrite: @escaping @Sendable (ChangeBatch) async throws -> ChangeBatch) {
        self.base = base
        self.rewrite = rewrite
    }

    var containerID: String { base.containerID }
    func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await base.missingChunks(hashes)
    }
    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) { try await base.putChunk(chunk) }
    func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk { try await base.chunk(hash) }
    func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? { try await base.entry(id) }
    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await base.commit(request)
    }
    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        try await base.commit(allOrNothing: requests)
    }
    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let batch = try await base.changes(after: cursor, limit: limit)
        do { return try await rewrite(batch) } catch { throw .unavailable("\(error)") }
    }
    func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool {
        try await base.waitForChanges(after: cursor, timeout: timeout)
    }
}
