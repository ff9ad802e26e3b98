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
    }
}
