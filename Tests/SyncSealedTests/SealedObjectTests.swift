import Crypto
import SyncBackend
import Testing

@testable import SyncSealed

/// Sealed chunks and records open only as what they were sealed for, and refuse every change.
@Suite("Sealed chunks and records")
struct SealedObjectTests {
    static let container = SealedContainerID.random()
    static let secret = EpochSecret.random()
    static let keys = EpochKeys(secret: secret, container: container, epoch: 0)

    static func chunk(_ text: String) -> EncodedChunk { Array(text.utf8).withUnsafeBytes { ChunkCodec.encode($0) } }

    @Test func aChunkRoundTripsAndIsPaddedToItsClass() throws {
        let compressible = EncodedChunk.compressible(bytes: 300_000)
        for plain in [Self.chunk("x"), Self.chunk(String(repeating: "ab", count: 10_000)), compressible] {
            let sealed = SealedChunkCodec.seal(plain, keys: Self.keys)
            #expect(sealed.envelope.count == SealedPadding.bucket(sealed.envelope.count))
            #expect(sealed.envelope.count >= plain.payload.count + SealedEnvelope.overhead)
            #expect(try SealedChunkCodec.open(sealed, as: plain.hash, keys: Self.keys) == plain)
        }
    }

    @Test func twoSealsOfOneChunkShareTheIDButNotTheBytes() {
        let plain = Self.chunk("same content")
        let first = SealedChunkCodec.seal(plain, keys: Self.keys)
        let second = SealedChunkCodec.seal(plain, keys: Self.keys)
        #expect(first.id == second.id)
        #expect(first.envelope != second.envelope)
    }

    @Test func anIDIsNotTheContentHashAndDependsOnContainerAndEpoch() {
        let plain = Self.chunk("content")
        let other = EpochKeys(secret: Self.secret, container: .random(), epoch: 0)
        let next = EpochKeys(secret: Self.secret, container: Self.container, epoch: 1)
        let id = Self.keys.chunkID(for: plain.hash)
        #expect(id != plain.hash)
        #expect(other.chunkID(for: plain.hash) != id)
        #expect(next.chunkID(for: plain.hash) != id)
    }

    @Test func everyFlippedBitIsRefused() {
        let plain = Self.chunk("a chunk the server would like to change")
        let sealed = SealedChunkCodec.seal(plain, keys: Self.keys)
        for index in stride(from: 0, to: sealed.envelope.count, by: 7) {
            var envelope = sealed.envelope
            envelope[index] ^= 0x01
            #expect(throws: SealedError.self) {
                try SealedChunkCodec.open(
                    SealedChunk(id: sealed.id, envelope: envelope), as: plain.hash, keys: Self.keys)
            }
        }
    }

    @Test func aChunkServedForAnotherIDOrContentIsRefused() {
        let first = Self.chunk("first")
        let second = Self.chunk("second")
        let sealedSecond = SealedChunkCodec.seal(second, keys: Self.keys)
        // The server answers the second chunk's envelope under the first's ID: the tag binds the ID.
        let swapped = SealedChunk(id: Self.keys.chunkID(for: first.hash), envelope: sealedSecond.envelope)
        #expect(throws: SealedError.self) { try SealedChunkCodec.open(swapped, as: first.hash, keys: Self.keys) }
        // Or answers the right envelope when asked for other content.
        #expect(throws: SealedError.self) { try SealedChunkCodec.open(sealedSecond, as: first.hash, keys: Self.keys) }
    }

    @Test func aChunkOfAnotherContainerOrEpochDoesNotOpen() {
        let plain = Self.chunk("moved")
        let otherContainer = EpochKeys(secret: Self.secret, container: .random(), epoch: 0)
        let sealed = SealedChunkCodec.seal(plain, keys: otherContainer)
        let relabelled = SealedChunk(id: Self.keys.chunkID(for: plain.hash), envelope: sealed.envelope)
        #expect(throws: SealedError.self) { try SealedChunkCodec.open(relabelled, as: plain.hash, keys: Self.keys) }
        let later = EpochKeys(secret: .random(), container: Self.container, epoch: 1)
        let sealedLater = SealedChunkCodec.seal(plain, keys: later)
        #expect(throws: SealedError.unknownEpoch(1)) {
            try SealedChunkCodec.open(
                SealedChunk(id: Self.keys.chunkID(for: plain.hash), envelope: sealedLater.envelope), as: plain.hash,
                keys: Self.keys)
        }
    }

    @Test func anotherFormatVersionIsRefusedBeforeAnyKeyIsTried() {
        let plain = Self.chunk("downgrade")
        var sealed = SealedChunkCodec.seal(plain, keys: Self.keys)
        var envelope = sealed.envelope
        envelope[0] = 0
        sealed = SealedChunk(id: sealed.id, envelope: envelope)
        #expect(throws: SealedError.unsupportedVersion(0)) {
            try SealedChunkCodec.open(sealed, as: plain.hash, keys: Self.keys)
        }
    }

    static let state = EntryState(
        parent: .random(), name: Array("Quarterly report.pdf".utf8), kind: .file, mode: 0o640, mtime: 1_234_567_890,
        size: 7, xattrs: ["user.b": [2], "user.a": [1]],
        manifest: [ChunkRef(hash: Array("content".utf8).withUnsafeBytes { ChunkCodec.hash($0) }, length: 7)])

    @Test func aRecordRoundTripsForItsEntryOnly() throws {
        let id = FileID.random()
        let record = SealedRecord.seal(Self.state, of: id, keys: Self.keys)
        #expect(try SealedRecord.open(record, of: id, keys: Self.keys) == Self.state)
        #expect(throws: SealedError.self) { try SealedRecord.open(record, of: .random(), keys: Self.keys) }
        let symlink = EntryState(
            parent: .random(), name: [0x6c], kind: .symlink, mode: 0o777, mtime: 0, size: 0,
            symlinkTarget: Array("../t".utf8))
        #expect(
            try SealedRecord.open(SealedRecord.seal(symlink, of: id, keys: Self.keys), of: id, keys: Self.keys)
                == symlink)
    }

    @Test func aRecordHidesTheLengthOfItsName() {
        let id = FileID.random()
        var short = Self.state
        short.name = [0x61]
        var long = Self.state
        long.name = [UInt8](repeating: 0x61, count: 255)
        #expect(
            SealedRecord.seal(short, of: id, keys: Self.keys).count
                == SealedRecord.seal(long, of: id, keys: Self.keys).count)
    }

    @Test func aRecordWhoseStateBreaksTheRulesIsRefused() {
        var bad = Self.state
        bad.size = 8  // the manifest holds 7 bytes
        let id = FileID.random()
        let record = SealedRecord.seal(bad, of: id, keys: Self.keys)
        #expect(throws: SealedError.self) { try SealedRecord.open(record, of: id, keys: Self.keys) }
    }

    @Test func theRecordEncodingRefusesTruncationAndTrailingBytes() throws {
        let encoded = RecordEncoding.encode(Self.state)
        #expect(try RecordEncoding.decode(encoded) == Self.state)
        for length in [0, 1, 20, encoded.count - 1] {
            #expect(throws: SealedError.self) { try RecordEncoding.decode(Array(encoded.prefix(length))) }
        }
        #expect(throws: SealedError.self) { try RecordEncoding.decode(encoded + [0]) }
    }
}

extension EncodedChunk {
    /// A chunk zlib shrinks: `bytes` of text with a little variety.
    static func compressible(bytes: Int) -> EncodedChunk {
        let text = (0..<bytes).map { UInt8(0x61 + ($0 / 97) % 26) }
        return text.withUnsafeBytes { ChunkCodec.encode($0) }
    }
}
