import Foundation
import NIOCore
import NIOHTTP1
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// `PUT`/`GET .../chunks/HASH` and `POST .../chunks/missing`: a chunk is stored only when its
/// payload decodes to its declared length and hashes to its hash; sizes are bounded.
@Suite struct ChunkRequestTests {
    @Test(arguments: ServerBackend.allCases) func chunksRoundTripRawAndZlib(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let raw = Sample.chunk(Sample.bytes(3000))  // incompressible enough to stay raw? either way
            let text = Sample.chunk(Array(String(repeating: "hello sync ", count: 2000).utf8))
            #expect(text.encoding == .zlib)
            for chunk in [raw, text] {
                #expect(try await fixture.put(chunk).status == 204)
                #expect(try await fixture.put(chunk).status == 204)  // idempotent
                let reply = try await fixture.send(.GET, fixture.path("/chunks/\(chunk.hash.hex)"))
                #expect(reply.status == 200)
                #expect(reply.body == chunk.payload)
                #expect(
                    reply.headers.first(name: WireProtocol.chunkEncodingHeader)
                        == WireProtocol.encodingName(chunk.encoding))
                #expect(reply.headers.first(name: WireProtocol.plainLengthHeader) == String(chunk.plainLength))
                #expect(reply.headers.first(name: "Content-Type") == "application/octet-stream")
            }
            let absent = Sample.chunk(Sample.bytes(10, seed: 99))
            let missing = try await fixture.send(
                .POST, fixture.path("/chunks/missing"),
                json: MissingChunksRequest(hashes: [raw.hash, absent.hash, text.hash]))
            #expect(missing.status == 200)
            #expect(try missing.decode(MissingChunksResponse.self).missing == [absent.hash])
            let notFound = try await fixture.send(.GET, fixture.path("/chunks/\(absent.hash.hex)"))
            #expect(notFound.status == 404)
            #expect(notFound.code == .chunkNotFound)
        }
    }

    @Test(arguments: ServerBackend.allCases) func bytesThatDoNotMatchTheHashAre422AndNotStored(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(5000))
            let other = Sample.chunk(Sample.bytes(5000, seed: 3))
            // Another chunk's bytes under this hash.
            var forged = other
            forged.hash = chunk.hash
            // The right bytes with a wrong plain length.
            var shortened = chunk
            shortened.plainLength -= 1
            // One flipped byte.
            var flipped = chunk
            flipped.payload[flipped.payload.count / 2] ^= 1
            // A zlib payload that inflates beyond its declared length: a megabyte of zeros
            // claimed to be the first thousand of them (hash and length of those).
            let zeros = Sample.chunk([UInt8](repeating: 0, count: 1 << 20))
            let thousand = Sample.chunk([UInt8](repeating: 0, count: 1000))
            let inflating = EncodedChunk(
                hash: thousand.hash, encoding: .zlib, plainLength: 1000, payload: zeros.payload)
            // A bomb: 32 MiB of zeros declared as the largest chunk (its hash: of 16 MiB of zeros).
            let bomb = Sample.chunk([UInt8](repeating: 0, count: 32 << 20))
            let largest = [UInt8](repeating: 0, count: WireProtocol.maxChunkPlainLength).withUnsafeBytes {
                ChunkCodec.hash($0)
            }
            let bombed = EncodedChunk(
                hash: largest, encoding: .zlib, plainLength: WireProtocol.maxChunkPlainLength, payload: bomb.payload)
            // Raw bytes declared zlib.
            let notZlib = EncodedChunk(
                hash: chunk.hash, encoding: .zlib, plainLength: 5000, payload: Sample.bytes(5000))
            for (what, bad) in [
                ("forged", forged), ("shortened", shortened), ("flipped", flipped), ("inflating", inflating),
                ("bomb", bombed), ("not zlib", notZlib),
            ] {
                let reply = try await fixture.put(bad)
                #expect(reply.status == 422, "\(what): \(reply.text)")
                #expect(reply.code == .chunkMismatch, "\(what)")
            }
            let container = try await fixture.container()
            let hashes = [chunk.hash, thousand.hash, largest]
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.missingChunks(hashes)
                }
                    == hashes)
        }
    }

    @Test(arguments: ServerBackend.allCases) func missingOrInvalidChunkHeadersAre400(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(1000))
            let encoding = WireProtocol.chunkEncodingHeader
            let length = WireProtocol.plainLengthHeader
            let cases: [(String, [(String, String)])] = [
                ("no headers", []),
                ("no encoding", [(length, "1000")]),
                ("no length", [(encoding, "raw")]),
                ("unknown encoding", [(encoding, "gzip"), (length, "1000")]),
                ("encoding in capitals", [(encoding, "RAW"), (length, "1000")]),
                ("negative length", [(encoding, "raw"), (length, "-1")]),
                ("signed length", [(encoding, "raw"), (length, "+1000")]),
                ("text length", [(encoding, "raw"), (length, "a thousand")]),
                ("empty length", [(encoding, "raw"), (length, "")]),
                ("two lengths", [(encoding, "raw"), (length, "1000"), (length, "1000")]),
                ("two encodings", [(encoding, "raw"), (encoding, "raw"), (length, "1000")]),
            ]
            for (what, headers) in cases {
                let reply = try await fixture.send(
                    .PUT, fixture.path("/chunks/\(chunk.hash.hex)"), headers: headers, body: chunk.payload)
                #expect(reply.status == 400, "\(what): \(reply.text)")
                #expect(reply.code == .invalidRequest, "\(what)")
            }
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([chunk.hash])
                }
                    == [chunk.hash])
        }
    }

    @Test(arguments: ServerBackend.allCases) func oversizedChunksAndBatchesAre413(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            // A body one byte over the limit (declared raw of that length: over the plain limit too).
            let big = [UInt8](repeating: 1, count: WireProtocol.maxChunkBodyBytes + 1)
            let hash = big.withUnsafeBytes { ChunkCodec.hash($0) }
            let overBody = try await fixture.send(
                .PUT, fixture.path("/chunks/\(hash.hex)"),
                headers: [(WireProtocol.chunkEncodingHeader, "zlib"), (WireProtocol.plainLengthHeader, "1000")],
                body: big)
            #expect(overBody.status == 413)
            #expect(overBody.code == .tooLarge)
            let overLength = try await fixture.send(
                .PUT, fixture.path("/chunks/\(hash.hex)"),
                headers: [
                    (WireProtocol.chunkEncodingHeader, "raw"),
                    (WireProtocol.plainLengthHeader, String(WireProtocol.maxChunkPlainLength + 1)),
                ],
                body: Array(big.prefix(10)))
            #expect(overLength.status == 413)
            #expect(overLength.code == .tooLarge)
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.missingChunks([hash])
                }
                    == [hash])
            // One hash too many.
            let hashes = (0...WireProtocol.maxMissingCheckHashes).map { index in
                ChunkHash(bytes: (0..<32).map { UInt8(truncatingIfNeeded: index >> (($0 % 4) * 8)) })!
            }
            let tooMany = try await fixture.send(
                .POST, fixture.path("/chunks/missing"), json: MissingChunksRequest(hashes: hashes))
            #expect(tooMany.status == 413)
            #expect(tooMany.code == .tooLarge)
            // Exactly the limit is fine.
            let atLimit = try await fixture.send(
                .POST, fixture.path("/chunks/missing"), json: MissingChunksRequest(hashes: Array(hashes.dropLast())))
            #expect(atLimit.status == 200)
            #expect(try atLimit.decode(MissingChunksResponse.self).missing.count == WireProtocol.maxMissingCheckHashes)
            // The connection is still usable after a refused upload.
            #expect(try await fixture.send(.GET, fixture.path()).status == 200)
        }
    }

    /// Beyond the server's limit of uploads in progress, an upload is refused at once with `503`
    /// and `Retry-After: 1` (nothing stored) instead of being queued; once a slot is free it goes
    /// through. (The token's and container's shares are raised here so the server's is reached.)
    @Test(arguments: ServerBackend.allCases) func uploadsBeyondTheLimitAre503WithRetryAfter(backend: ServerBackend)
        async throws
    {
        var limits = ServerLimits.standard(uploads: 1)
        limits.perToken.uploads = 2
        limits.perContainer.uploads = 2
        try await ServerFixture.run(backend: backend, limits: limits) { fixture in
            let slow = Sample.chunk(Sample.bytes(100_000, seed: 1))
            let other = Sample.chunk(Sample.bytes(2000, seed: 2))
            let (upload, feed) = fixture.streamingPut(slow)
            feed.yield(ByteBuffer(bytes: slow.payload.prefix(1000)))
            try await fixture.server.waitUntil("the first upload holds the slot") { $0.chunkUploadsInProgress == 1 }
            let refused = try await fixture.put(other)
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.code == .unavailable)
            #expect(refused.headers.first(name: "Retry-After") == "1")
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([other.hash])
                }
                    == [other.hash])
            feed.yield(ByteBuffer(bytes: slow.payload.dropFirst(1000)))
            feed.finish()
            #expect(try await upload.value.status == 204)
            #expect(fixture.server.chunkUploadsInProgress == 0)
            #expect(try await fixture.put(other).status == 204)
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([slow.hash, other.hash])
                }
                .isEmpty)
        }
    }

    /// A body without `Content-Length` (chunked) is cut off as soon as it passes the limit.
    @Test(arguments: ServerBackend.allCases) func aChunkedBodyOverTheLimitIs413(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(1000))
            let (upload, feed) = fixture.streamingPut(chunk, length: false)
            let piece = [UInt8](repeating: 7, count: 1 << 20)
            for _ in 0...(WireProtocol.maxChunkBodyBytes >> 20) { feed.yield(ByteBuffer(bytes: piece)) }
            feed.finish()
            let reply = try await upload.value
            #expect(reply.status == 413, "\(reply.text)")
            #expect(reply.code == .tooLarge)
            #expect(fixture.server.chunkUploadsInProgress == 0)
        }
    }
}
