import Testing

@testable import SyncBackend

@Suite("ChunkHash and FileID: textual forms")
struct ChunkHashTests {
    @Test func hexRoundTrip() throws {
        let bytes = (0..<32).map { UInt8($0 * 7 & 0xff) }
        let hash = try #require(ChunkHash(bytes: bytes))
        #expect(hash.hex.count == 64)
        #expect(ChunkHash(hex: hash.hex) == hash)
        #expect(ChunkHash(hex: hash.hex.uppercased()) == hash)
    }

    @Test func rejectsMalformed() {
        #expect(ChunkHash(bytes: [1, 2, 3]) == nil)
        #expect(ChunkHash(hex: String(repeating: "g", count: 64)) == nil)
        #expect(ChunkHash(hex: "00") == nil)
        #expect(FileID(hex: "ABC") == nil)
        #expect(FileID(hex: FileID.random().hex) != nil)
        #expect(FileID(hex: String(repeating: "A", count: 32)) == nil, "lowercase only")
        #expect(FileID(hex: String(repeating: "0", count: 31)) == nil)
        #expect(FileID(hex: String(repeating: "0", count: 33)) == nil)
        #expect(FileID(hex: "0000000000000001ffffffffffffffff") == FileID(high: 1, low: .max))
        let digits = Array("000000000000000a0000000000000010".utf8)
        #expect(digits.withUnsafeBufferPointer { FileID(hexDigits: $0) } == FileID(high: 10, low: 16))
    }
}
