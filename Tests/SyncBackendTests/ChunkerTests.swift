import Foundation
import TestSupport
import Testing

@testable import SyncBackend

@Suite("ContentDefinedChunker and FileChunker")
struct ChunkerTests {
    /// Small parameters so that megabytes of test data make hundreds of chunks.
    static let small = ContentDefinedChunker(minSize: 4 << 10, averageSize: 16 << 10, maxSize: 64 << 10)

    @Test func boundariesSurviveAnInsert() {
        let chunker = Self.small
        let original = SeededGenerator.bytes(count: 16 << 20, seed: 1)
        var edited = original
        edited.insert(0x5A, at: original.count / 2)

        let before = chunkHashes(original, chunker)
        let after = chunkHashes(edited, chunker)
        #expect(before.count > 500)
        let prefix = zip(before, after).prefix { $0 == $1 }.count
        let suffix = zip(before.reversed(), after.reversed()).prefix { $0 == $1 }.count
        #expect(prefix + suffix >= before.count - 2, "changed: \(before.count - prefix - suffix) of \(before.count)")
        #expect(prefix + suffix >= after.count - 2, "changed: \(after.count - prefix - suffix) of \(after.count)")
    }

    @Test func chunksCoverTheDataWithinBounds() {
        for chunker in [Self.small, .standard] {
            let data = SeededGenerator.bytes(count: 9 << 20 + 12_345, seed: 2)
            let lengths = cutLengths(data, chunker)
            #expect(lengths.reduce(0, +) == data.count)
            for length in lengths.dropLast() {
                #expect(length > chunker.minSize && length <= chunker.maxSize)
            }
            #expect(lengths.last! > 0 && lengths.last! <= chunker.maxSize)
        }
    }

    @Test func averageIsNearTheTarget() {
        let chunker = Self.small
        let lengths = cutLengths(SeededGenerator.bytes(count: 16 << 20, seed: 3), chunker)
        let mean = Double(lengths.reduce(0, +)) / Double(lengths.count)
        #expect(mean > Double(chunker.averageSize) * 0.75 && mean < Double(chunker.averageSize) * 1.5, "mean \(mean)")
    }

    @Test func dataUpToMinSizeIsOneChunk() {
        let chunker = Self.small
        for count in [0, 1, 1000, chunker.minSize] {
            let data = SeededGenerator.bytes(count: count, seed: 4)
            #expect(cutLengths(data, chunker) == (count == 0 ? [] : [count]))
        }
    }

    @Test func allZeroDataGivesMaxSizeChunks() {
        for chunker in [Self.small, .standard] {
            let data = [UInt8](repeating: 0, count: 2 * chunker.maxSize + 100)
            #expect(cutLengths(data, chunker) == [chunker.maxSize, chunker.maxSize, 100])
        }
    }

    @Test func cutDependsOnlyOnTheFirstMaxSizeBytes() {
        let chunker = Self.small
        let data = SeededGenerator.bytes(count: 3 * chunker.maxSize, seed: 5)
        data.withUnsafeBytes { all in
            let whole = chunker.cutPoint(in: all)
            let window = chunker.cutPoint(in: UnsafeRawBufferPointer(rebasing: all.prefix(chunker.maxSize)))
            #expect(whole == window)
        }
    }

    @Test func fileChunkerMatchesTheInMemoryChunker() throws {
        let cases: [(ContentDefinedChunker, Int)] = [
            (Self.small, 0), (Self.small, 1), (Self.small, 5000), (Self.small, FileChunker.bufferSize),
            (Self.small, 2 * FileChunker.bufferSize + 12_345), (.standard, 3 * FileChunker.bufferSize / 2 + 777),
        ]
        for (chunker, count) in cases {
            let data = SeededGenerator.bytes(count: count, seed: UInt64(count))
            try withTemporaryFile(data) { descriptor in
                var fromFile: [ChunkHash] = []
                var covered = 0
                try FileChunker.forEachChunk(of: descriptor, length: Int64(count), chunker: chunker) { chunk in
                    #expect(!chunk.isEmpty)
                    covered += chunk.count
                    fromFile.append(ChunkCodec.hash(chunk))
                }
                #expect(covered == count)
                #expect(fromFile == chunkHashes(data, chunker), "length \(count)")
            }
        }
    }

    @Test func fileChunkerStopsAtTheGivenLength() throws {
        let data = SeededGenerator.bytes(count: 300 << 10, seed: 6)
        let length = 200 << 10 + 3
        try withTemporaryFile(data) { descriptor in
            var fromFile: [ChunkHash] = []
            try FileChunker.forEachChunk(of: descriptor, length: Int64(length), chunker: Self.small) {
                fromFile.append(ChunkCodec.hash($0))
            }
            #expect(fromFile == chunkHashes(Array(data.prefix(length)), Self.small))
        }
    }

    @Test func shortFileThrows() throws {
        let data = SeededGenerator.bytes(count: 100_000, seed: 7)
        try withTemporaryFile(data) { descriptor in
            #expect(throws: FileChunkerError.shortRead) {
                try FileChunker.forEachChunk(of: descriptor, length: 100_001, chunker: Self.small) { _ in }
            }
        }
    }

    @Test func readErrorThrowsErrno() {
        #expect(throws: FileChunkerError.io(EBADF)) {
            try FileChunker.forEachChunk(of: -1, length: 10) { _ in }
        }
    }
}

/// Chunk lengths of `data`, cut in memory.
func cutLengths(_ data: [UInt8], _ chunker: ContentDefinedChunker) -> [Int] {
    data.withUnsafeBytes { all in
        var lengths: [Int] = []
        var offset = 0
        while offset < all.count {
            let length = chunker.cutPoint(in: UnsafeRawBufferPointer(rebasing: all[offset...]))
            lengths.append(length)
            offset += length
        }
        return lengths
    }
}

/// The SHA-256 of each chunk of `data`, cut in memory.
func chunkHashes(_ data: [UInt8], _ chunker: ContentDefinedChunker) -> [ChunkHash] {
    var offset = 0
    return cutLengths(data, chunker).map { length in
        defer { offset += length }
        return data.withUnsafeBytes { ChunkCodec.hash(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + length])) }
    }
}

/// Runs `body` with a read-only descriptor of a fresh temporary file holding `data`, then removes the file.
func withTemporaryFile(_ data: [UInt8], _ body: (Int32) throws -> Void) throws {
    let directory = try TemporaryDirectory("chunker")
    let path = directory.path + "/data"
    try Data(data).write(to: URL(fileURLWithPath: path))
    let descriptor = open(path, O_RDONLY)
    try #require(descriptor >= 0)
    defer { close(descriptor) }
    try body(descriptor)
}
