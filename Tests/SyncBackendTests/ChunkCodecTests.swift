import TestSupport
import Testing

@testable import SyncBackend

@Suite("ChunkCodec: hashing, zlib, verification")
struct ChunkCodecTests {
    static let text: [UInt8] = {
        var lines: [String] = []
        for number in 0..<2000 {
            lines.append("line \(number): the quick brown fox jumps over the lazy dog, \(number * 7919 % 1000)")
        }
        return Array(lines.joined(separator: "\n").utf8)
    }()
    static let random = SeededGenerator.bytes(count: 200_000, seed: 42)

    @Test func knownHash() {
        let hash = Array("abc".utf8).withUnsafeBytes { ChunkCodec.hash($0) }
        #expect(hash.hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func compressibleTextIsStoredAsZlibAndRoundTrips() throws {
        let chunk = encode(Self.text)
        #expect(chunk.encoding == .zlib)
        #expect(chunk.payload.count < Self.text.count / 2)
        #expect(chunk.plainLength == Self.text.count)
        #expect(chunk.hash == Self.text.withUnsafeBytes { ChunkCodec.hash($0) })
        #expect(try ChunkCodec.decode(chunk) == Self.text)
        #expect(Array(chunk.payload.prefix(1)) == [0x78], "zlib header, not raw deflate")
    }

    @Test func randomBytesAreStoredRawAndRoundTrip() throws {
        let chunk = encode(Self.random)
        #expect(chunk.encoding == .raw)
        #expect(chunk.payload == Self.random)
        #expect(try ChunkCodec.decode(chunk) == Self.random)
    }

    @Test func everyLevelRoundTrips() throws {
        for level in Int32(0)...9 {
            for data in [Self.text, Self.random, []] {
                let chunk = encode(data, level: level)
                #expect(try ChunkCodec.decode(chunk) == data, "level \(level)")
                if level == 0 || data.count < 2 { #expect(chunk.encoding == .raw) }
                if level > 0 && data == Self.text { #expect(chunk.encoding == .zlib) }
            }
        }
    }

    @Test func flippedPayloadByteIsCorrupt() {
        for data in [Self.text, Self.random] {
            for position in [0, 1, 100, 5000] {
                var chunk = encode(data)
                chunk.payload[position] ^= 0x01
                #expect(throws: ContainerProtocolError.corruptChunk(chunk.hash)) { try ChunkCodec.decode(chunk) }
            }
            var chunk = encode(data)
            chunk.payload[chunk.payload.count - 1] ^= 0x80
            #expect(throws: ContainerProtocolError.corruptChunk(chunk.hash)) { try ChunkCodec.decode(chunk) }
        }
    }

    @Test func wrongPlainLengthIsCorrupt() {
        for data in [Self.text, Self.random] {
            for delta in [-1, 1, -data.count, -data.count - 1, Int.max / 4] {
                var chunk = encode(data)
                chunk.plainLength += delta
                #expect(throws: ContainerProtocolError.corruptChunk(chunk.hash)) { try ChunkCodec.decode(chunk) }
            }
        }
    }

    @Test func truncatedOrExtendedPayloadIsCorrupt() {
        for data in [Self.text, Self.random] {
            var truncated = encode(data)
            truncated.payload.removeLast()
            #expect(throws: ContainerProtocolError.corruptChunk(truncated.hash)) { try ChunkCodec.decode(truncated) }
            var halved = encode(data)
            halved.payload.removeLast(halved.payload.count / 2)
            #expect(throws: ContainerProtocolError.corruptChunk(halved.hash)) { try ChunkCodec.decode(halved) }
            var extended = encode(data)
            extended.payload.append(0)
            #expect(throws: ContainerProtocolError.corruptChunk(extended.hash)) { try ChunkCodec.decode(extended) }
        }
    }

    @Test func wrongHashIsCorrupt() {
        for data in [Self.text, Self.random] {
            var chunk = encode(data)
            chunk.hash = Array("not this chunk".utf8).withUnsafeBytes { ChunkCodec.hash($0) }
            #expect(throws: ContainerProtocolError.corruptChunk(chunk.hash)) { try ChunkCodec.decode(chunk) }
        }
    }

    @Test func wrongEncodingIsCorrupt() {
        var zlib = encode(Self.text)
        zlib.encoding = .raw
        #expect(throws: ContainerProtocolError.corruptChunk(zlib.hash)) { try ChunkCodec.decode(zlib) }
        var raw = encode(Self.random)
        raw.encoding = .zlib
        #expect(throws: ContainerProtocolError.corruptChunk(raw.hash)) { try ChunkCodec.decode(raw) }
    }

    /// A sealed chunk is never plain content: not even one whose payload is exactly its plain
    /// bytes and whose name is their SHA-256 decodes. What a container can check of it is its
    /// length (`verifyShape`), and for the others `verifyShape` is `decode`.
    @Test func sealedChunksNeverDecodeAndHaveOnlyTheirLengthChecked() throws {
        var sealed = encode(Self.random)
        sealed.encoding = .sealed
        #expect(throws: ContainerProtocolError.corruptChunk(sealed.hash)) { try ChunkCodec.decode(sealed) }
        #expect(throws: Never.self) { try ChunkCodec.verifyShape(sealed) }
        let named = EncodedChunk(
            hash: ChunkHash(bytes: SeededGenerator.bytes(count: 32, seed: 7))!, encoding: .sealed, plainLength: 3,
            payload: [1, 2, 3])
        #expect(throws: Never.self) { try ChunkCodec.verifyShape(named) }
        var short = named
        short.plainLength = 4
        #expect(throws: ContainerProtocolError.corruptChunk(short.hash)) { try ChunkCodec.verifyShape(short) }
        #expect(throws: ContainerProtocolError.self) { try ChunkValidation.check(short) }
        #expect(throws: Never.self) { try ChunkValidation.check(named) }

        var flipped = encode(Self.text)
        flipped.payload[10] ^= 0xFF
        #expect(throws: ContainerProtocolError.corruptChunk(flipped.hash)) { try ChunkCodec.verifyShape(flipped) }
        #expect(throws: Never.self) { try ChunkCodec.verifyShape(encode(Self.text)) }
    }

    @Test func reusedEncoderMatchesOneShotEncoding() throws {
        for level in [Int32(0), 1, 6, 9] {
            let encoder = ChunkEncoder(level: level)
            // Small after large exercises a scratch buffer larger than needed; large after small, its growth.
            for data in [Self.text, [], [7], Array(Self.text.prefix(100)), Self.random, Self.text, Self.random] {
                let reused = data.withUnsafeBytes { encoder.encode($0) }
                #expect(reused == encode(data, level: level))
                #expect(try ChunkCodec.decode(reused) == data)
            }
        }
    }

    @Test func chunkThatBarelyShrinksIsZlib() throws {
        // Random bytes followed by a run: the zlib stream is a little shorter than the plain bytes.
        let data = Array(Self.random.prefix(10_000)) + [UInt8](repeating: 9, count: 200)
        let chunk = encode(data)
        #expect(chunk.encoding == .zlib)
        #expect(chunk.payload.count < data.count)
        #expect(try ChunkCodec.decode(chunk) == data)
    }

    private func encode(_ data: [UInt8], level: Int32 = 1) -> EncodedChunk {
        data.withUnsafeBytes { ChunkCodec.encode($0, level: level) }
    }
}
