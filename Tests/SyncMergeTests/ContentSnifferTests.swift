import Testing

@testable import SyncMerge

@Suite("ContentSniffer")
struct ContentSnifferTests {
    static let cases: [([UInt8], Bool)] = [
        ([], true),
        (bytes("plain ASCII text\n"), true),
        (bytes(String(repeating: "long ascii line ", count: 100)), true),
        (bytes("café 日本 😀\r\n"), true),
        (bytes("e\u{301}"), true),
        ([0x41, 0x00, 0x42], false),
        (bytes("sixteen bytes ok") + [0] + bytes("then more"), false),
        ([0xFF], false),
        ([0x41, 0x80], false),
        ([0xC0, 0x80], false),  // overlong NUL
        ([0xE0, 0x80, 0x80], false),  // overlong
        ([0xED, 0xA0, 0x80], false),  // a surrogate
        ([0xF4, 0x90, 0x80, 0x80], false),  // past U+10FFFF
        ([0xE2, 0x82], false),  // truncated
        (bytes("abcdefgh") + [0xE2, 0x82, 0xAC] + bytes("ijklmnop"), true),
    ]

    @Test(arguments: cases)
    func isText(_ content: [UInt8], _ expected: Bool) {
        #expect(ContentSniffer.isText(content) == expected)
    }
}
