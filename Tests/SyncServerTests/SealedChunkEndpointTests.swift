import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// Sealed chunks over HTTP (`SyncFS-Chunk-Encoding: sealed`, encoding byte 2 in a chunk batch):
/// stored and served as they came when the payload is the plain length, `422` and nothing stored
/// otherwise; a share link never serves a sealed chunk's bytes as a file's content.
@Suite struct SealedChunkEndpointTests {
    /// `count` bytes of ciphertext under a 32-byte name the server cannot check.
    static func sealed(_ count: Int, seed: UInt64) -> EncodedChunk {
        let payload = SeededGenerator.bytes(count: count, seed: seed)
        return EncodedChunk(
            hash: ChunkHash(bytes: SeededGenerator.bytes(count: 32, seed: seed &+ 99))!, encoding: .sealed,
            plainLength: count, payload: payload)
    }

    @Test(arguments: ServerBackend.allCases) func sealedChunksAreStoredAndServedAsTheyCame(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Self.sealed(40_000, seed: 1)
            #expect(try await fixture.put(chunk).status == 204)
            let reply = try await fixture.send(.GET, fixture.path("/chunks/\(chunk.hash.hex)"))
            #expect(reply.status == 200 && reply.body == chunk.payload)
            #expect(reply.headers.first(name: WireProtocol.chunkEncodingHeader) == "sealed")
            #expect(reply.headers.first(name: WireProtocol.plainLengthHeader) == String(chunk.plainLength))

            var wrong = Self.sealed(1_000, seed: 2)
            wrong.plainLength = 999
            let refused = try await fixture.put(wrong)
            #expect(refused.status == 422 && refused.code == .chunkMismatch, "\(refused.status) \(refused.text)")
            #expect(try await ChunkBatchEndpointTests.missing([wrong], fixture) == [wrong.hash])

            // In a batch: encoding byte 2; one sealed chunk that is not its length refuses all.
            let batch = [Self.sealed(500, seed: 3), Sample.chunk(Sample.bytes(800)), Self.sealed(0, seed: 4)]
            let body = try ChunkBatchFormat.encode(batch)
            #expect(body[32] == 2)
            let bad = ChunkBatchEndpointTests.frame(
                hash: Self.sealed(10, seed: 5).hash, encoding: 2, plainLength: 11,
                payload: Array(repeating: 1, count: 10))
            let mixed = try await fixture.send(.POST, fixture.path(ChunkBatchEndpointTests.path), body: body + bad)
            #expect(mixed.status == 422 && mixed.code == .chunkMismatch, "\(mixed.status) \(mixed.text)")
            #expect(try await ChunkBatchEndpointTests.missing(batch, fixture) == batch.map(\.hash))
            let stored = try await fixture.send(.POST, fixture.path(ChunkBatchEndpointTests.path), body: body)
            #expect(stored.status == 204, "\(stored.text)")
            let container = try await fixture.container()
            for chunk in batch {
                #expect(
                    try await onDisk { () async throws(ContainerProtocolError) in try await container.chunk(chunk.hash)
                    }
                        == chunk)
            }
        }
    }

    /// A file whose first chunk is sealed is `403` through a view link, nothing counted or sent;
    /// one whose sealed chunk comes later is cut short: its ciphertext never reaches the link's
    /// holder. The server goes on serving plain files.
    @Test(arguments: ServerBackend.allCases) func aShareLinkNeverServesSealedBytes(backend: ServerBackend) async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let container = try await fixture.container()
            let plain = Sample.chunk(Sample.bytes(3_000))
            let sealed = Self.sealed(5_000, seed: 6)
            try await onDisk { () async throws(ContainerProtocolError) in
                try await container.putChunks([plain, sealed])
                let outcomes = try await container.commit(batch: [
                    Sample.create(Sample.file("sealed first", chunks: [sealed, plain])),
                    Sample.create(Sample.file("sealed later", chunks: [plain, sealed])),
                    Sample.create(Sample.file("plain", chunks: [plain])),
                ])
                guard outcomes.allSatisfy({ if case .committed = $0 { true } else { false } }) else {
                    throw .invalidRequest("not committed: \(outcomes)")
                }
            }
            let (_, secret) = try await LinkTree.link(fixture, .init(container: fixture.name, prefix: "", kind: .view))
            let first = try await fixture.link(secret, "/content?path=sealed%20first")
            #expect(first.status == 403 && first.code == .forbidden, "\(first.status) \(first.text)")
            #expect(!Self.contains(first.body, sealed.payload))

            do {
                let later = try await fixture.link(secret, "/content?path=sealed%20later")
                #expect(later.body.count < plain.plainLength + sealed.plainLength, "the body was cut short")
                #expect(!Self.contains(later.body, Array(sealed.payload.prefix(64))))
            } catch {
                // The connection closed before the declared length: nothing of the chunk was sent.
            }
            let served = try await fixture.link(secret, "/content?path=plain")
            #expect(served.status == 200 && served.body == Sample.bytes(3_000))
        }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
