import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// `POST .../chunks/batch`: the chunks of a framed body stored as `PUT .../chunks/HASH` stores
/// each; a hostile token holder's batches (a chunk whose bytes do not match its hash in the
/// middle, frames cut short, lengths and counts over the limits, another container's token, a
/// batch over the quota) are refused with nothing of the batch stored; a batch holds an upload
/// slot while its body arrives.
@Suite struct ChunkBatchEndpointTests {
    static let path = "/chunks/batch"

    /// A frame as a hostile client may write it: any hash, encoding byte and lengths.
    static func frame(
        hash: ChunkHash, encoding: UInt8 = 0, plainLength: UInt32, payloadLength: UInt32? = nil, payload: [UInt8]
    ) -> [UInt8] {
        func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        return hash.bytes + [encoding] + bigEndian(plainLength)
            + bigEndian(payloadLength ?? UInt32(payload.count)) + payload
    }

    static func chunks(_ count: Int, seed: UInt8) -> [EncodedChunk] {
        (0..<count).map { Sample.chunk(Sample.bytes(700 + $0, seed: seed &+ UInt8($0))) }
    }

    static func missing(_ chunks: [EncodedChunk], _ fixture: ServerFixture) async throws -> [ChunkHash] {
        let container = try await fixture.container()
        return try await onDisk { () async throws(ContainerProtocolError) in
            try await container.missingChunks(chunks.map(\.hash))
        }
    }

    @Test(arguments: ServerBackend.allCases) func chunksAreStoredAsSingleUploadsStoreThem(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let text = Array(String(repeating: "compressible ", count: 300).utf8)
            let zlib = text.withUnsafeBytes { ChunkCodec.encode($0, level: 6) }
            #expect(zlib.encoding == .zlib)
            let batch = Self.chunks(3, seed: 1) + [zlib, Sample.chunk([])]
            let reply = try await fixture.send(.POST, fixture.path(Self.path), body: try ChunkBatchFormat.encode(batch))
            #expect(reply.status == 204, "\(reply.text)")
            let container = try await fixture.container()
            for chunk in batch { #expect(try await container.chunk(chunk.hash) == chunk) }
            // Idempotent, and an empty batch stores nothing.
            #expect(
                try await fixture.send(.POST, fixture.path(Self.path), body: ChunkBatchFormat.encode(batch)).status
                    == 204)
            #expect(try await fixture.send(.POST, fixture.path(Self.path), body: []).status == 204)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aChunkThatDoesNotMatchItsHashIs422AndNothingIsStored(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            var batch = Self.chunks(3, seed: 2)
            let claimed = batch[1].hash
            batch[1].payload[5] ^= 0xFF
            let body = try ChunkBatchFormat.encode(batch)
            let reply = try await fixture.send(.POST, fixture.path(Self.path), body: body)
            #expect(reply.status == 422 && reply.code == .chunkMismatch, "\(reply.status) \(reply.text)")
            let message = reply.wireError?.message ?? ""
            #expect(message.contains("chunk 1") && message.contains(claimed.hex), "\(message)")
            #expect(try await Self.missing(batch, fixture) == batch.map(\.hash), "nothing of the batch is stored")

            // A zlib payload claiming a plain length it does not inflate to.
            let text = Array(String(repeating: "zip ", count: 1000).utf8)
            var bomb = text.withUnsafeBytes { ChunkCodec.encode($0, level: 6) }
            bomb.plainLength -= 1
            let second = [Self.chunks(1, seed: 3)[0], bomb]
            let refused = try await fixture.send(.POST, fixture.path(Self.path), body: ChunkBatchFormat.encode(second))
            #expect(refused.status == 422, "\(refused.text)")
            #expect(try await Self.missing(second, fixture) == second.map(\.hash))
        }
    }

    @Test(arguments: ServerBackend.allCases) func framesCutShortOrMalformedAre400(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let batch = Self.chunks(2, seed: 4)
            let whole = try ChunkBatchFormat.encode(batch)
            let first = whole.count - batch[1].payload.count - ChunkBatchFormat.frameHeaderBytes
            var badEncoding = whole
            badEncoding[first + 32] = 7
            let bodies: [(String, [UInt8], String)] = [
                ("payload cut", Array(whole.dropLast(1)), "inside the payload of chunk 1"),
                ("header cut", Array(whole.prefix(first + 20)), "inside the header of chunk 1"),
                ("a few bytes", [1, 2, 3], "inside the header of chunk 0"),
                ("encoding", badEncoding, "encoding 7"),
            ]
            for (what, body, mention) in bodies {
                let reply = try await fixture.send(.POST, fixture.path(Self.path), body: body)
                #expect(reply.status == 400 && reply.code == .invalidRequest, "\(what): \(reply.status) \(reply.text)")
                #expect(reply.wireError?.message.contains(mention) == true, "\(what): \(reply.text)")
                #expect(try await Self.missing(batch, fixture) == batch.map(\.hash), "\(what)")
            }
        }
    }

    @Test(arguments: ServerBackend.allCases) func lengthsAndCountsOverTheLimitsAre413(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let good = Self.chunks(1, seed: 5)[0]
            let goodFrame = try ChunkBatchFormat.encode([good])
            let hash = good.hash
            let over = UInt32(WireProtocol.maxChunkPlainLength + 1)
            // Distinct chunks: a hash repeated in a batch is refused (400) before the count is.
            let many = try (0...CommitBatch.maximumChunks).flatMap { index in
                try ChunkBatchFormat.encode([Sample.chunk([UInt8(index & 0xff), UInt8(index >> 8)])])
            }
            let bodies: [(String, [UInt8])] = [
                ("plain length", goodFrame + Self.frame(hash: hash, plainLength: over, payload: [])),
                (
                    "payload length",
                    goodFrame + Self.frame(hash: hash, plainLength: 1, payloadLength: over, payload: [])
                ),
                ("count", many),
                ("body", [UInt8](repeating: 0, count: WireProtocol.maxChunkBatchBodyBytes + 1)),
            ]
            for (what, body) in bodies {
                let reply = try await fixture.send(.POST, fixture.path(Self.path), body: body)
                #expect(reply.status == 413 && reply.code == .tooLarge, "\(what): \(reply.status) \(reply.text)")
                #expect(try await Self.missing([good], fixture) == [hash], "\(what)")
            }
        }
    }

    /// Payloads of 16 MiB and one byte together pass the batch's limit though each is within a
    /// chunk's and the body within the endpoint's: `413` at the frame that passes it.
    @Test func payloadsOverTheBatchLimitTogetherAre413() async throws {
        try await ServerFixture.run(backend: .embedded) { fixture in
            let full = WireProtocol.maxChunkPlainLength
            let body =
                Self.frame(
                    hash: Sample.chunk([1]).hash, plainLength: UInt32(full), payload: [UInt8](repeating: 0, count: full)
                )
                + Self.frame(hash: Sample.chunk([2]).hash, plainLength: 1, payload: [2])
            #expect(body.count <= WireProtocol.maxChunkBatchBodyBytes)
            let reply = try await fixture.send(.POST, fixture.path(Self.path), body: body)
            #expect(reply.status == 413 && reply.code == .tooLarge, "\(reply.status) \(reply.text)")
            #expect(reply.wireError?.message.contains("chunk 1") == true, "\(reply.text)")
        }
    }

    /// Small payloads that declare 16 MiB of plain bytes each (zlib of zeros): more than 64 MiB
    /// declared together would cost that much inflating and hashing: `413` at the frame that
    /// passes it, before any is checked. The same hash twice in a batch is `400`.
    @Test func declaredPlainBytesAndRepeatedHashesAreBounded() async throws {
        try await ServerFixture.run(backend: .embedded) { fixture in
            let full = UInt32(WireProtocol.maxChunkPlainLength)
            let body = (0..<5).flatMap { index in
                Self.frame(
                    hash: Sample.chunk([UInt8(index)]).hash, encoding: 1, plainLength: full, payload: [0x78, 0x9c])
            }
            let reply = try await fixture.send(.POST, fixture.path(Self.path), body: body)
            #expect(reply.status == 413 && reply.code == .tooLarge, "\(reply.status) \(reply.text)")
            #expect(reply.wireError?.message.contains("chunk 4") == true, "\(reply.text)")
            let twice = Sample.chunk([9])
            let repeated =
                Self.frame(hash: twice.hash, plainLength: 1, payload: [9])
                + Self.frame(hash: twice.hash, plainLength: 1, payload: [9])
            let second = try await fixture.send(.POST, fixture.path(Self.path), body: repeated)
            #expect(second.status == 400 && second.code == .invalidRequest, "\(second.status) \(second.text)")
            #expect(try await Self.missing([twice], fixture) == [twice.hash], "nothing of the batch stored")
        }
    }

    @Test(arguments: ServerBackend.allCases) func anotherContainersTokenIs403(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let otherToken = try await fixture.makeContainer("other")
            let batch = Self.chunks(2, seed: 6)
            let reply = try await fixture.send(
                .POST, fixture.path(Self.path), auth: .token(otherToken), body: try ChunkBatchFormat.encode(batch))
            #expect(reply.status == 403 && reply.code == .forbidden, "\(reply.status) \(reply.text)")
            #expect(try await Self.missing(batch, fixture) == batch.map(\.hash))
        }
    }

    /// Three chunks of 30 KiB fit a quota of 100 KiB, two more do not: the batch of those two
    /// is refused whole; a batch of chunks the container holds is never refused.
    @Test(arguments: ServerBackend.allCases) func aBatchOverTheQuotaIs507AndNothingIsStored(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend, quotas: QuotaSettings(perContainer: ["box": 100 * 1024])) {
            fixture in
            var generator = SystemRandomNumberGenerator()
            let chunks = (0..<5).map { index in
                Sample.chunk(
                    (0..<(30 * 1024)).map { _ in UInt8.random(in: 0...255, using: &generator) } + [UInt8(index)])
            }
            let fits = try await fixture.send(
                .POST, fixture.path(Self.path), body: ChunkBatchFormat.encode(Array(chunks.prefix(3))))
            #expect(fits.status == 204, "\(fits.text)")
            let over = try await fixture.send(
                .POST, fixture.path(Self.path), body: ChunkBatchFormat.encode(Array(chunks.suffix(2))))
            #expect(over.status == 507 && over.code == .quotaExceeded, "\(over.status) \(over.text)")
            #expect(try await Self.missing(Array(chunks.suffix(2)), fixture) == chunks.suffix(2).map(\.hash))
            let again = try await fixture.send(
                .POST, fixture.path(Self.path), body: ChunkBatchFormat.encode(Array(chunks.prefix(3))))
            #expect(again.status == 204, "held chunks are never refused: \(again.text)")
        }
    }

    /// A batch whose body is still arriving holds one chunk-upload slot; with the token's only
    /// slot taken, a single upload is `429` until the batch is done.
    @Test(.timeLimit(.minutes(1))) func aBatchHoldsAnUploadSlotWhileItsBodyArrives() async throws {
        let limits = ServerLimits.standard(uploads: 4)  // one slot per token
        try await ServerFixture.run(backend: .embedded, limits: limits) { fixture in
            let batch = Self.chunks(2, seed: 7)
            let body = try ChunkBatchFormat.encode(batch)
            let (stream, feed) = AsyncStream<ByteBuffer>.makeStream()
            var request = HTTPClientRequest(url: fixture.server.baseURL + fixture.path(Self.path))
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(fixture.token)")
            request.body = .stream(stream, length: .known(Int64(body.count)))
            let reply = Task { [client = fixture.client] in
                try await ServerFixture.execute(client, request, timeout: .seconds(30))
            }
            feed.yield(ByteBuffer(bytes: body.prefix(100)))
            try await fixture.server.waitUntil("the batch holds a slot") { $0.chunkUploadsInProgress == 1 }
            let single = try await fixture.put(Self.chunks(1, seed: 8)[0])
            #expect(single.status == 429, "\(single.status) \(single.text)")
            feed.yield(ByteBuffer(bytes: body.dropFirst(100)))
            feed.finish()
            #expect(try await reply.value.status == 204)
            #expect(fixture.server.chunkUploadsInProgress == 0)
            #expect(try await Self.missing(batch, fixture).isEmpty)
        }
    }
}
