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
        // Never cut inside a character: 125 é (250 bytes) and .pdf.
        let accented = Array((String(repeating: "é", count: 125) + ".pdf").utf8)
        for attempt in [2, 100, 101] {
            let candidate = UploadName.candidate(accented, attempt)
            #expect(candidate.count <= 255 && String(validating: candidate, as: UTF8.self) != nil, "\(attempt)")
        }
        // Past the numbered names, a random tag: the answer is always a name, never "taken".
        let random = String(decoding: UploadName.candidate(name, 101), as: UTF8.self)
        #expect(random.hasPrefix("report.final (") && random.hasSuffix(").pdf") && random != "report.final (101).pdf")
        for hostile in ["a\u{1B}[2Jb", "evil\u{202E}fdp.exe", "line\nbreak", "\u{FFFD}.txt", "del\u{7F}"] {
            #expect(UploadName.problem(Array(hostile.utf8)) != nil, "\(hostile.debugDescription)")
        }
        #expect(UploadName.problem(Array("Résumé 2024 (final).pdf".utf8)) == nil)
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

    @Test func linkTransfersAreCappedPerServerAddressAndLinkAndGivenBack() throws {
        let traffic = LinkTraffic(perServer: 5, perAddress: 2, perLink: 2)
        func refusal(_ address: String, _ link: String) -> LinkTraffic.Full? {
            if case .failure(let full) = traffic.enter(address: address, link: link) { return full }
            return nil
        }
        var held: [LinkTraffic.Ticket] = []
        held.append(try traffic.enter(address: "192.0.2.1", link: "aaaaaaaa").get())
        held.append(try traffic.enter(address: "192.0.2.1", link: "bbbbbbbb").get())
        #expect(refusal("192.0.2.1", "cccccccc") == .address)
        held.append(try traffic.enter(address: "2001:db8::1", link: "aaaaaaaa").get())
        #expect(refusal("2001:db8::2", "aaaaaaaa") == .link)
        // One /64 is one address.
        held.append(try traffic.enter(address: "2001:db8::2", link: "cccccccc").get())
        #expect(refusal("2001:db8::3", "dddddddd") == .address)
        held.append(try traffic.enter(address: "198.51.100.7", link: "dddddddd").get())
        #expect(refusal("203.0.113.9", "eeeeeeee") == .server)
        held.removeLast(3)
        #expect(traffic.inProgress == 2)
        held.removeAll()
        #expect(traffic.inProgress == 0, "every ticket gave its place back")
    }

    @Test func theLogNeverShowsALinksWholeSecret() {
        let secret = "lnk_" + String(repeating: "ab", count: 32)
        let logged = SyncResponder.loggable("/v1/links/\(secret)/content")
        #expect(!logged.contains(secret) && logged.hasPrefix("/v1/links/lnk_abababab") && logged.hasSuffix("/content"))
        #expect(SyncResponder.loggable("/v1/containers/box") == "/v1/containers/box")
    }
}
