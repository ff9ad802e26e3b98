import Testing

@testable import SyncMerge

/// `prefer=max(json:…)`, `prefer=min(json:…)`, `prefer=larger`, `prefer=smaller`, and the JSON
/// Pointers and number comparisons behind them.
@Suite("Preference")
struct PreferenceTests {
    func pointer(_ text: String) -> JSONPointer { try! JSONPointer(Substring(text)) }

    /// The text of the value `pointer` names in `json` (nil: none).
    func lookup(_ pointer: String, in json: String) -> String? {
        let document = JSONParser.parse(bytes(json))!
        return self.pointer(pointer).value(in: document.root).map {
            String(decoding: document.bytes[$0.span], as: UTF8.self)
        }
    }

    @Test func pointersFollowRFC6901() {
        // The examples of RFC 6901, section 5.
        let document = #"""
            {"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5,
             "k\"l": 6, " ": 7, "m~n": 8}
            """#
        let table: [(String, String?)] = [
            ("/foo", #"["bar", "baz"]"#), ("/foo/0", #""bar""#), ("/", "0"), ("/a~1b", "1"), ("/c%d", "2"),
            ("/e^f", "3"), ("/g|h", "4"), (#"/i\j"#, "5"), (#"/k"l"#, "6"), ("/ ", "7"), ("/m~0n", "8"),
            ("/foo/1", #""baz""#), ("/foo/2", nil), ("/foo/-", nil), ("/foo/01", nil), ("/foo/x", nil),
            ("/missing", nil), ("/a~1b/c", nil), ("/foo/99999999999999999999", nil),
        ]
        for (text, expected) in table {
            #expect(lookup(text, in: document) == expected, "\(text)")
        }
        #expect(lookup("", in: document)?.hasPrefix("{\"foo\"") == true, "the whole document")
        // ~01 is "~1" (the ~0 is decoded first, never again).
        #expect(lookup("/~01", in: #"{"~1": "tilde-one", "/": "slash"}"#) == #""tilde-one""#)
        #expect(lookup("/é/0", in: #"{"\u00e9": [true]}"#) == "true", "keys compare decoded")
    }

    @Test func malformedPointersAreRefused() {
        for (text, message) in [
            ("a", "it must be empty or start with \"/\""),
            ("/~", "\"~\" must be followed by 0 or 1 (~0 is \"~\", ~1 is \"/\")"),
            ("/a~2", "\"~\" must be followed by 0 or 1 (~0 is \"~\", ~1 is \"/\")"),
            ("/" + String(repeating: "x", count: 1024), "longer than 1024 bytes"),
        ] {
            #expect(throws: JSONPointer.SyntaxError(message: message)) { try JSONPointer(Substring(text)) }
        }
        #expect((try? JSONPointer(Substring("/" + String(repeating: "x", count: 1023)))) != nil)
    }

    func number(_ text: String) -> JSONNumber { JSONNumber(lexeme: ArraySlice(bytes(text))) }

    @Test func numbersCompareExactly() {
        let table: [(String, String, JSONNumberOrder)] = [
            ("2", "10", .less), ("1.0", "1", .equal), ("-0", "0", .equal), ("0.0", "-0e5", .equal),
            ("10000000000000000001", "10000000000000000000", .greater), ("-5", "3", .less), ("-5", "-3", .less),
            ("-0.001", "0", .less), ("1e3", "999.9999", .greater), ("12", "1.2e1", .equal), ("0.12", "0.123", .less),
            ("1E400", "1e399", .greater), ("-1e400", "-1e399", .less),
            ("123456789012345678901234567890", "1.2e29", .greater),
        ]
        for (a, b, order) in table {
            #expect(number(a).compared(to: number(b)) == order, "\(a) vs \(b)")
            let reversed: JSONNumberOrder = order == .less ? .greater : order == .greater ? .less : .equal
            #expect(number(b).compared(to: number(a)) == reversed, "\(b) vs \(a)")
        }
        #expect(number("1e9999999999999999").compared(to: number("1")) == nil, "too large to compute with")
    }

    func versions(local: String, remote: String) -> MergeVersions {
        MergeVersions(
            content: MergeVersions.Content(base: [], local: bytes(local), remote: bytes(remote)),
            localSize: Int64(local.utf8.count), remoteSize: Int64(remote.utf8.count), localModified: 0,
            remoteModified: 0)
    }

    @Test func theGreaterOrSmallerNumberWins() {
        let local = #"{"score": 120, "player": {"level": 3}}"#
        let remote = #"{"score": 95.5, "player": {"level": 7}}"#
        #expect(MergePolicy.maximum(pointer("/score")).decide(versions(local: local, remote: remote)) == .local)
        #expect(MergePolicy.minimum(pointer("/score")).decide(versions(local: local, remote: remote)) == .remote)
        #expect(MergePolicy.maximum(pointer("/player/level")).decide(versions(local: local, remote: remote)) == .remote)
        #expect(MergePolicy.minimum(pointer("/player/level")).decide(versions(local: local, remote: remote)) == .local)
        #expect(MergePolicy.maximum(pointer("")).decide(versions(local: "7", remote: "12")) == .remote)
        let big = versions(local: "[18446744073709551617]", remote: "[18446744073709551616]")
        #expect(MergePolicy.maximum(pointer("/0")).decide(big) == .local, "no precision lost")
    }

    @Test func undecidableComparisonsFallThrough() {
        let score = MergePolicy.maximum(pointer("/score"))
        let table: [(String, String, String)] = [
            (#"{"score": 1}"#, #"{"score": 1.00}"#, #"both versions have the same number at "/score""#),
            (#"{"score": 1}"#, #"{"points": 1}"#, #"the remote version has no value at "/score""#),
            (#"{"score": "9"}"#, #"{"score": 1}"#, #"the local version's value at "/score" is not a number"#),
            (#"{"score": 1"#, #"{"score": 1}"#, "the local version is not valid JSON"),
            (#"{"score": 1}"#, "", "the remote version is not valid JSON"),
            (#"[1]"#, #"[2]"#, #"the local version has no value at "/score""#),
            (#"{"score": 1e9999999999999999}"#, #"{"score": 1}"#, #"a number at "/score" is too large to compare"#),
        ]
        for (local, remote, reason) in table {
            #expect(score.decide(versions(local: local, remote: remote)) == .fallThrough(reason), "\(local) \(remote)")
        }
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(
            score.decide(versions(local: deep, remote: "{}")) == .fallThrough("the local version is not valid JSON"))
        let unread = MergeVersions(localSize: 1, remoteSize: 2, localModified: 0, remoteModified: 0)
        #expect(score.decide(unread) == .fallThrough(#"both changed the content; too large to compare "/score""#))
    }

    @Test func largerAndSmallerCompareSizes() {
        let sized = MergeVersions(localSize: 10, remoteSize: 20, localModified: 5, remoteModified: 0)
        #expect(MergePolicy.larger.decide(sized) == .remote)
        #expect(MergePolicy.smaller.decide(sized) == .local)
        let tie = MergeVersions(localSize: 7, remoteSize: 7, localModified: 5, remoteModified: 0)
        #expect(MergePolicy.larger.decide(tie) == .fallThrough("both versions have the same size (7 bytes)"))
        #expect(MergePolicy.smaller.decide(tie) == .fallThrough("both versions have the same size (7 bytes)"))
    }
}
