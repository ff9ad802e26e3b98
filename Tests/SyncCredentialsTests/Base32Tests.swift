import Testing

@testable import SyncCredentials

@Suite("Base32")
struct Base32Tests {
    /// RFC 4648 section 10.
    static let vectors: [(String, String)] = [
        ("", ""),
        ("f", "MY======"),
        ("fo", "MZXQ===="),
        ("foo", "MZXW6==="),
        ("foob", "MZXW6YQ="),
        ("fooba", "MZXW6YTB"),
        ("foobar", "MZXW6YTBOI======"),
    ]

    @Test(arguments: vectors)
    func encodesTheRFCVectors(_ plain: String, _ encoded: String) {
        #expect(Base32.encode(Array(plain.utf8), padding: true) == encoded)
        #expect(Base32.encode(Array(plain.utf8)) == encoded.filter { $0 != "=" })
    }

    @Test(arguments: vectors)
    func decodesTheRFCVectorsWithAndWithoutPadding(_ plain: String, _ encoded: String) {
        #expect(Base32.decode(encoded) == Array(plain.utf8))
        #expect(Base32.decode(encoded.filter { $0 != "=" }) == Array(plain.utf8))
        #expect(Base32.decode(encoded.lowercased()) == Array(plain.utf8))
    }

    @Test func roundTripsEveryByteValue() {
        let bytes = (0...255).map { UInt8($0) }
        for count in 0...bytes.count {
            #expect(Base32.decode(Base32.encode(Array(bytes.prefix(count)))) == Array(bytes.prefix(count)))
        }
    }

    static let malformed = [
        "MZXW6YQ1",  // 1 is not in the alphabet
        "MZXW6YQ0",
        "MZXW 6YQ",
        "MZXW6YQ\n",
        "MZXW-YQ=",
        "MZXW6YÉ=",
        "M=ZXW6YQ",  // padding inside
        "MY=====",  // padded, but not to a whole group
        "MY======MZXQ====",  // padding before the end
        "========",  // a group of padding alone
        "M",  // lengths no byte count encodes to
        "MZX",
        "MZXW6Y",
        "MZ",  // leftover bits that are not zero
        "MZXR",
    ]

    @Test(arguments: malformed)
    func refusesWhatIsNotBase32(_ text: String) {
        #expect(Base32.decode(text) == nil)
    }
}
