import SyncBackend
import TestSupport
import Testing

@testable import SyncSealed

/// The fingerprint attack on content-defined chunking ("Breaking and Fixing Content-Defined
/// Chunking", RWC 2025): a server that knows a file computes its chunk lengths and looks for that
/// sequence among the stored object sizes. A sealed container cuts with a keyed gear table and
/// pads every stored chunk to a size class, so the sequence is not there.
@Suite("Chunk-length fingerprints")
struct ChunkFingerprintTests {
    /// A 24 MiB "known file": text-like bytes (zlib shrinks them) with random words, so chunks differ.
    static let knownFile: [UInt8] = {
        var generator = SeededGenerator(seed: 0x5EA1)
        let words = (0..<512).map { _ in (0..<generator.int(2...9)).map { _ in UInt8(0x61 + generator.below(26)) } }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24 << 20)
        while bytes.count < 24 << 20 {
            bytes += generator.pick(words)
            bytes.append(generator.chance(0.1) ? 0x0A : 0x20)
        }
        return bytes
    }()

    static func cuts(_ bytes: [UInt8], with chunker: ContentDefinedChunker) -> [Int] {
        var lengths: [Int] = []
        var offset = 0
        bytes.withUnsafeBytes { buffer in
            while offset < buffer.count {
                let length = chunker.cutPoint(in: UnsafeRawBufferPointer(rebasing: buffer[offset...]))
                lengths.append(length)
                offset += length
            }
        }
        return lengths
    }

    static func contains(_ haystack: [Int], window needle: ArraySlice<Int>) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            Array(haystack[$0..<$0 + needle.count]) == Array(needle)
        }
    }

    @Test func aKnownFilesChunkLengthsCannotBeFoundAmongTheStoredSizes() {
        let keys = EpochKeys(secret: .random(), container: .random(), epoch: 0)
        let file = Self.knownFile
        // What the attacker computes: the public chunker's cuts, and the compressed length of each
        // of those chunks (what an unpadded, unkeyed store would show, plus the envelope).
        let publicCuts = Self.cuts(file, with: .standard)
        var offset = 0
        var publicSizes: [Int] = []
        for length in publicCuts {
            let chunk = file[offset..<offset + length].withUnsafeBytes { ChunkCodec.encode($0) }
            publicSizes.append(chunk.payload.count + SealedEnvelope.overhead + SealedChunkCodec.innerHeader)
            offset += length
        }
        // What the server stores for the file in a sealed container.
        let keyedCuts = Self.cuts(file, with: keys.chunker)
        offset = 0
        var storedSizes: [Int] = []
        for length in keyedCuts {
            let chunk = file[offset..<offset + length].withUnsafeBytes { ChunkCodec.encode($0) }
            storedSizes.append(SealedChunkCodec.seal(chunk, keys: keys).envelope.count)
            offset += length
        }
        #expect(publicCuts.count >= 8 && keyedCuts.count >= 8)
        // The keyed cuts are not the public ones (at most the forced 4 MiB cuts could coincide).
        var publicOffsets = Set<Int>()
        var running = 0
        for length in publicCuts.dropLast() {
            running += length
            publicOffsets.insert(running)
        }
        running = 0
        var shared = 0
        for length in keyedCuts.dropLast() {
            running += length
            if publicOffsets.contains(running) { shared += 1 }
        }
        #expect(shared * 4 < keyedCuts.count, "keyed and public cuts coincide \(shared) times")
        // Every stored size is a padding class, never an exact length.
        #expect(storedSizes.allSatisfy { SealedPadding.bucket($0) == $0 })
        // No window of the attacker's lengths is among the stored sizes: three exact ones, or four
        // padded to their classes (with an unkeyed chunker the padded windows would all be there).
        let paddedPublic = publicSizes.map(SealedPadding.bucket)
        for start in 0...(publicSizes.count - 4) {
            #expect(!Self.contains(storedSizes, window: publicSizes[start..<start + 3]))
            #expect(!Self.contains(storedSizes, window: paddedPublic[start..<start + 4]))
        }
    }

    @Test func theKeyedChunkerIsDeterministicPerKeyAndDiffersBetweenKeys() {
        let secret = EpochSecret.random()
        let container = SealedContainerID.random()
        let sample = Array(Self.knownFile.prefix(8 << 20))
        let first = Self.cuts(sample, with: EpochKeys(secret: secret, container: container, epoch: 0).chunker)
        let again = Self.cuts(sample, with: EpochKeys(secret: secret, container: container, epoch: 0).chunker)
        let other = Self.cuts(sample, with: EpochKeys(secret: .random(), container: container, epoch: 0).chunker)
        #expect(first == again)
        #expect(first != other)
    }
}
