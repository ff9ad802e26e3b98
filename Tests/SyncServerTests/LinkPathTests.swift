import Testing

@testable import SyncServer

/// The pure parts of share links: paths, upload names, download headers.
@Suite struct LinkPathTests {
    @Test func pathsNameOnlyWhatIsBelowTheirStart() throws {
        #expect(try LinkPath.parse("").get().names.isEmpty)
        #expect(try LinkPath.parse("a/b c/ü").get().names == [Array("a".utf8), Array("b c".utf8), Array("ü".utf8)])
        let refused: [(String, LinkPathError)] = [
            ("..", .dotName), ("a/..", .dotName), (".", .dotName), ("a/./b", .dotName), ("/a", .emptyName),
            ("a/", .emptyName), ("a//b", .emptyName), ("a\u{0}b", .badName),
            (String(repeating: "x", count: 256), .badName), (String(repeating: "a/", count: 300) + "a", .tooDeep),
            (String(repeating: "x", count: 4097), .tooLong),
        ]
        for (text, error) in refused {
            #expect(LinkPath.parse(text) == .failure(error), "\(text.prefix(20))")
        }
        #expect(LinkPath.name("a/b") == .failure(.notOneName))
        #expect(LinkPath.name("") == .failure(.emptyName))
        #expect(LinkPath.name("...") == .success(Array("...".utf8)), "three dots is a name like any other")
    }

    @Test func uploadNamesTryNumberedAlternativesWithinTheNameLimit() {
        let name = Array("report.final.pdf".utf8)
        #expect(UploadName.candidate(name, 1) == name)
        #expect(String(decoding: UploadName.candidate(name, 2), as: UTF8.self) == "report.final (2).pdf")
        #expect(String(decoding: UploadName.candidate(Array(".bashrc".utf8), 3), as: UTF8.self) == ".bashrc (3)")
        #expect(String(decoding: UploadName.candidate(Array("README".utf8), 10), as: UTF8.self) == "README (10)")
        let long = Array(String(repeating: "n", count: 250).utf8) + Array(".txt".utf8)
        let shortened = UploadName.candidate(long, 100)
        #expect(shortened.count <= 255 && shortened.suffix(10) == Array(" (100).txt".utf8))
        let allExtension = Array(("." + String(repeating: "e", count: 254)).utf8)
        #expect(UploadName.candidate(allExtension, 2).count <= 255)
    }

    @Test func aDownloadsNameCannotBreakItsHeader() {
        let hostile: [UInt8] = Array("a\"; filename=evil.sh\r\nX-Evil: 1/../ü".utf8) + [0xFF]
        let header = ContentDisposition.attachment(hostile)
        #expect(!header.contains("\r") && !header.contains("\n") && !header.contains("/"))
        #expect(header.hasPrefix("attachment; filename=\"a__ filename_evil.sh__X-Evil_ 1_.._"))
        #expect(header.components(separatedBy: "\"").count == 3, "exactly one quoted fallback: \(header)")
        #expect(header.hasSuffix("%C3%BC%FF"))
        #expect(ContentDisposition.attachment([]).contains("filename=\"download\""))
    }

    @Test func listingCursorsCarryAnyNameBytes() {
        let name: [UInt8] = [0x00, 0x7F, 0xFF, 0x41]
        #expect(HexName.decode(HexName.encode(name)) == name)
        for bad in ["", "0", "zz", "ABCD", String(repeating: "0", count: 512)] {
            #expect(HexName.decode(bad) == nil, "\(bad)")
        }
    }
}
