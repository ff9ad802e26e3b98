import TestSupport
import Testing

@testable import SyncBackend

/// Sealed chunks (`ChunkEncoding.sealed`: a client's ciphertext under a name the container cannot
/// check), on every container (`ContainerKind`): stored and served byte for byte as they came,
/// one by one and in batches, named by commits like any chunk; one whose payload is not its plain
/// length is refused and not stored.
@Suite("Container conformance: sealed chunks")
struct ContainerSealedChunkConformanceTests {
    /// A sealed chunk of `count` random bytes under a random 32-byte name (as a keyed MAC is).
    static func sealedChunk(_ count: Int, seed: UInt64) -> EncodedChunk {
        let payload = SeededGenerator.bytes(count: count, seed: seed)
        let name = ChunkHash(bytes: SeededGenerator.bytes(count: 32, seed: seed &+ 1_000_003))!
        return EncodedChunk(hash: name, encoding: .sealed, plainLength: payload.count, payload: payload)
    }

    @Test(arguments: ContainerKind.plainCases)
    func sealedChunksComeBackAsTheyWereStored(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let single = Self.sealedChunk(70_000, seed: 1)
        #expect(try await container.missingChunks([single.hash]) == [single.hash])
        try await container.putChunk(single)
        try await container.putChunk(single)  // idempotent
        #expect(try await container.missingChunks([single.hash]).isEmpty)
        #expect(try await container.chunk(single.hash) == single)

        let batch = [Self.sealedChunk(1, seed: 2), Self.sealedChunk(0, seed: 3), Self.sealedChunk(300_000, seed: 4)]
        let plain = rawChunk("a plain chunk beside them")
        #expect(try await container.missingChunks(batch.map(\.hash)) == batch.map(\.hash))
        try await container.putChunks(batch + [plain])
        #expect(try await container.missingChunks(batch.map(\.hash) + [plain.hash]).isEmpty)
        for chunk in batch + [plain] { #expect(try await container.chunk(chunk.hash) == chunk) }

        // A commit names them as it names any chunk (of at least one byte).
        let named = [single, batch[0], batch[2]]
        let file = try await container.mustPut(.random(), base: 0, fileState("sealed", chunks: named))
        #expect(file.state.manifest.map(\.hash) == named.map(\.hash))
        #expect(file.state.size == Int64(named.reduce(0) { $0 + $1.plainLength }))
    }

    @Test(arguments: ContainerKind.plainCases)
    func aSealedChunkThatIsNotItsLengthIsRefused(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        var longer = Self.sealedChunk(100, seed: 5)
        longer.plainLength = 99
        var shorter = Self.sealedChunk(100, seed: 6)
        shorter.plainLength = 101
        for chunk in [longer, shorter] {
            #expect(await protocolError { try await container.putChunk(chunk) }?.isInvalidRequest == true)
            #expect(await protocolError { try await container.putChunks([chunk]) }?.isInvalidRequest == true)
            #expect(try await container.missingChunks([chunk.hash]) == [chunk.hash])
        }
    }
}
