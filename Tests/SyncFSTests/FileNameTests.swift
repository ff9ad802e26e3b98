import Testing

@testable import SyncFS

/// `FileName`: short names are kept inline, long ones in an array, and the two forms never mix.
@Suite("FileName: two forms, one name")
struct FileNameTests {
    @Test func aNameTakesTwoWords() {
        #expect(MemoryLayout<FileName>.size == 16)
    }

    /// Every length around the inline capacity reads back the bytes it was given, in both forms.
    @Test func everyLengthReadsBackItsBytes() {
        for length in [1, 2, 7, 8, 12, 14, 15, 16, 17, 64, 255] {
            let bytes = (0..<length).map { UInt8(0x61 + $0 % 26) }
            let name = FileName(bytes: bytes)
            #expect(name.bytes == bytes, "length \(length)")
            #expect(name.count == length)
            #expect(name.withUnsafeBytes { Array($0) } == bytes)
            #expect(name.description == String(decoding: bytes, as: UTF8.self))
        }
    }

    /// Names that differ only past the inline capacity, or only by a trailing byte, differ.
    @Test func namesEqualOnlyWhenTheirBytesAre() {
        let fifteen = FileName(String(repeating: "x", count: 15))
        let sixteen = FileName(String(repeating: "x", count: 16))
        #expect(fifteen != sixteen)
        #expect(FileName("a") != FileName("a\u{1}"))
        #expect(FileName("abc") == FileName(bytes: Array("abc".utf8)))
        // Inline names that differ only in their last byte (the last word of the inline form).
        let lastByte = FileName(String(repeating: "x", count: 14) + "y")
        #expect(lastByte != fifteen)
        #expect(lastByte.bytes.last == UInt8(ascii: "y"))
        #expect(sixteen == FileName(String(repeating: "x", count: 16)))
        let table: [FileName: Int] = [fifteen: 15, sixteen: 16, FileName("a"): 1]
        #expect(table[FileName(String(repeating: "x", count: 15))] == 15)
        #expect(table[FileName(String(repeating: "x", count: 16))] == 16)
        #expect(table[FileName("a")] == 1)
    }

    /// A NUL cannot be kept inline (a zero ends an inline name): such bytes keep the array form,
    /// read back whole, and are refused as a new entry's name.
    @Test func aNameWithANulKeepsItsBytesAndIsRefused() throws {
        let bytes: [UInt8] = [0x61, 0, 0x62]
        let name = FileName(bytes: bytes)
        #expect(name.bytes == bytes)
        #expect(name != FileName("a"))
        #expect(throws: FSError.invalidArgument) { try name.validated() }
    }

    @Test func namesSortByTheirBytes() {
        let names = ["b", "a", "ab", "aaaaaaaaaaaaaaaaaaaa", "zzzzzzzzzzzzzzzzz", "\u{e9}", "B"].map(FileName.init)
        let sorted = names.sorted().map(\.bytes)
        #expect(sorted == names.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func validationRefusesWhatLinuxRefuses() throws {
        #expect(throws: FSError.invalidArgument) { try FileName("").validated() }
        #expect(throws: FSError.invalidArgument) { try FileName(".").validated() }
        #expect(throws: FSError.invalidArgument) { try FileName("..").validated() }
        #expect(throws: FSError.invalidArgument) { try FileName("a/b").validated() }
        #expect(throws: FSError.nameTooLong) { try FileName(String(repeating: "n", count: 256)).validated() }
        _ = try FileName("...").validated()
        _ = try FileName(".a").validated()
        _ = try FileName(String(repeating: "n", count: 255)).validated()
    }
}
