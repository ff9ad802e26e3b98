import Testing

@testable import SyncMerge

@Suite("ThreeWayMerge.json")
struct JSONMergeTests {
    static let cases: [MergeCase] = [
        MergeCase(
            name: "disjoint keys", base: #"{"a":1,"b":2}"#, local: #"{"a":10,"b":2}"#, remote: #"{"a":1,"b":20}"#,
            expected: #"{"a":10,"b":20}"#),
        MergeCase(
            name: "keys added on both sides", base: #"{"a":1}"#, local: #"{"a":1,"l":true}"#,
            remote: #"{"r":null,"a":1}"#, expected: #"{"a":1,"l":true,"r":null}"#),
        MergeCase(
            name: "same key changed on both sides", base: #"{"a":1}"#, local: #"{"a":2}"#, remote: #"{"a":3}"#,
            expected: nil),
        MergeCase(
            name: "same key changed to equal values", base: #"{"a":1,"b":1}"#, local: #"{"a":2,"b":1}"#,
            remote: #"{"a":2.0,"b":2}"#, expected: #"{"a":2,"b":2}"#),
        MergeCase(
            name: "same key added with different values", base: #"{}"#, local: #"{"a":1}"#, remote: #"{"a":2}"#,
            expected: nil),
        MergeCase(
            name: "key deleted locally, changed remotely", base: #"{"a":1,"b":1}"#, local: #"{"b":1}"#,
            remote: #"{"a":2,"b":1}"#, expected: nil),
        MergeCase(
            name: "key changed locally, deleted remotely", base: #"{"a":1,"b":1}"#, local: #"{"a":2,"b":1}"#,
            remote: #"{"b":1}"#, expected: nil),
        MergeCase(
            name: "key deleted on one side, untouched on the other", base: #"{"a":1,"b":1}"#, local: #"{"b":1}"#,
            remote: #"{"a":1,"b":2}"#, expected: #"{"b":2}"#),
        MergeCase(
            name: "key deleted on both sides", base: #"{"a":1,"b":1,"c":1}"#, local: #"{"b":1,"c":1}"#,
            remote: #"{"b":2}"#, expected: #"{"b":2}"#),
        MergeCase(
            name: "nested objects merge recursively", base: #"{"s":{"x":1,"y":1},"t":0}"#,
            local: #"{"s":{"x":2,"y":1},"t":0}"#, remote: #"{"s":{"x":1,"y":2,"z":3},"t":0}"#,
            expected: #"{"s":{"x":2,"y":2,"z":3},"t":0}"#),
        MergeCase(
            name: "nested conflict", base: #"{"s":{"x":1}}"#, local: #"{"s":{"x":2}}"#, remote: #"{"s":{"x":3}}"#,
            expected: nil),
        MergeCase(
            name: "objects added on both sides merge", base: #"{"a":1}"#, local: #"{"a":1,"o":{"x":1}}"#,
            remote: #"{"a":1,"o":{"y":2}}"#, expected: #"{"a":1,"o":{"x":1,"y":2}}"#),
        MergeCase(
            name: "a scalar turned into objects on both sides", base: #"{"a":1}"#, local: #"{"a":{"x":1}}"#,
            remote: #"{"a":{"y":2}}"#, expected: #"{"a":{"x":1,"y":2}}"#),
        MergeCase(
            name: "object vs scalar", base: #"{"a":{}}"#, local: #"{"a":{"x":1}}"#, remote: #"{"a":5}"#,
            expected: nil),
        MergeCase(
            name: "arrays are atomic", base: #"{"l":[1,2]}"#, local: #"{"l":[1,2,3]}"#, remote: #"{"l":[0,1,2]}"#,
            expected: nil),
        MergeCase(
            name: "an array changed on one side", base: #"{"l":[1,2],"n":0}"#, local: #"{"l":[1,2],"n":1}"#,
            remote: #"{"l":[2, 1],"n":0}"#, expected: #"{"l":[2,1],"n":1}"#),
        MergeCase(
            name: "objects inside arrays are atomic too", base: #"[{"a":1}]"#, local: #"[{"a":1,"b":2}]"#,
            remote: #"[{"a":1,"c":3}]"#, expected: nil),
        MergeCase(
            name: "root scalars", base: "1", local: "2", remote: "3", expected: nil),
        MergeCase(
            name: "root scalar, remote only reformatted", base: "1", local: "2", remote: " 1.0\n", expected: "2"),
        MergeCase(
            name: "root arrays", base: "[1]", local: "[1,2]", remote: "[1] ", expected: "[1,2]"),
        MergeCase(
            name: "type change on one side", base: #"{"a":1,"b":0}"#, local: #"{"a":"one","b":0}"#,
            remote: #"{"a":1,"b":1}"#, expected: #"{"a":"one","b":1}"#),
        MergeCase(
            name: "key order of local kept, remote's new keys after", base: #"{"a":1,"b":2,"c":3}"#,
            local: #"{"c":3,"a":1,"b":2,"l":0}"#, remote: #"{"b":2,"r":0,"a":1,"c":4}"#,
            expected: #"{"c":4,"a":1,"b":2,"l":0,"r":0}"#),
        MergeCase(
            name: "number lexemes survive", base: #"{"a":1.0,"b":10000000000000000001,"c":1e2}"#,
            local: #"{"a":1.0,"b":10000000000000000001,"c":1e2,"d":-0.50}"#,
            remote: #"{"a":1.00,"b":10000000000000000001,"c":1E+2,"e":12345678901234567890123}"#,
            expected: #"{"a":1.0,"b":10000000000000000001,"c":1e2,"d":-0.50,"e":12345678901234567890123}"#),
        MergeCase(
            name: "big numbers are compared exactly", base: #"{"n":10000000000000000001,"m":0}"#,
            local: #"{"n":10000000000000000002,"m":0}"#, remote: #"{"n":10000000000000000003,"m":1}"#,
            expected: nil),
        MergeCase(
            name: "a number respelled is not a change", base: #"{"n":1.5,"m":0}"#, local: #"{"n":15e-1,"m":0}"#,
            remote: #"{"n":2,"m":1}"#, expected: #"{"n":2,"m":1}"#),
        MergeCase(
            name: "unicode escapes name the same keys", base: #"{"\u00e9":1}"#, local: #"{"\u00e9":2}"#,
            remote: #"{"é":1,"x":"\ud83d\ude00 \"q\""}"#, expected: #"{"\u00e9":2,"x":"\ud83d\ude00 \"q\""}"#),
        MergeCase(
            name: "strings compare decoded", base: #"{"s":"é","t":0}"#, local: #"{"s":"\u00E9","t":0}"#,
            remote: #"{"s":"e","t":1}"#, expected: #"{"s":"e","t":1}"#),
        MergeCase(
            name: "empty base counts as {}", base: "", local: #"{"a":1}"#, remote: #"{"b":2}"#,
            expected: #"{"a":1,"b":2}"#),
        MergeCase(
            name: "whitespace-only base counts as {}", base: " \n", local: #"{"a":1}"#, remote: #"{"a":2}"#,
            expected: nil),
        MergeCase(name: "empty base, arrays", base: "", local: "[1]", remote: "[2]", expected: nil),
        MergeCase(name: "empty local is not JSON", base: #"{"a":1}"#, local: "", remote: #"{"a":2}"#, expected: nil),
        MergeCase(
            name: "local removed everything but changed nothing", base: #"{"a":1}"#, local: "{}",
            remote: #"{"a":1,"b":2}"#, expected: #"{"b":2}"#),
    ]

    @Test(arguments: cases)
    func merge(_ example: MergeCase) {
        let outcome = ThreeWayMerge.json(
            base: bytes(example.base), local: bytes(example.local), remote: bytes(example.remote))
        #expect(text(outcome) == example.expected)
    }

    static let invalid: [String] = [
        #"{"a":1,}"#, #"{"a":1 // comment"#, #"{"a":1,"a":2}"#, #"{"a":NaN}"#, #"{"a":01}"#, #"{'a':1}"#,
        #"{"a":1} {"#, #"{"a":"x"#, "{\"a\":\"\u{1}\"}", #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":1e}"#, #"{"a":tru}"#,
        #"{"a":"\x"}"#, #"{"a":"\u12"}"#, "[", "]", "nul", #"{"a" 1}"#, #"[1 2]"#,
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ]

    @Test(arguments: invalid)
    func invalidJSONConflicts(_ document: String) {
        #expect(
            ThreeWayMerge.json(base: bytes(#"{"z":0}"#), local: bytes(document), remote: bytes(#"{"z":1}"#))
                == .conflicted)
        #expect(
            ThreeWayMerge.json(base: bytes(#"{"z":0}"#), local: bytes(#"{"z":1}"#), remote: bytes(document))
                == .conflicted)
        #expect(
            ThreeWayMerge.json(base: bytes(document), local: bytes(#"{"z":1}"#), remote: bytes(#"{"z":2}"#))
                == .conflicted)
    }

    @Test func deepNestingUpToTheLimitMerges() {
        let nested = String(repeating: "[", count: 510) + String(repeating: "]", count: 510)
        let outcome = ThreeWayMerge.json(
            base: bytes(#"{"d":\#(nested),"n":0}"#), local: bytes(#"{"d":\#(nested),"n":1}"#),
            remote: bytes(#"{"d":\#(nested),"n":0,"m":2}"#))
        #expect(text(outcome) == #"{"d":\#(nested),"n":1,"m":2}"#)
    }

    @Test func invalidUTF8Conflicts() {
        let bad: [UInt8] = bytes(#"{"a":""#) + [0xFF] + bytes(#""}"#)
        #expect(
            ThreeWayMerge.json(base: bytes(#"{"a":""}"#), local: bad, remote: bytes(#"{"a":"","b":1}"#)) == .conflicted)
    }

    @Test func nothingToMergeReturnsTheChangedSideAsItIs() {
        #expect(
            ThreeWayMerge.json(base: bytes("{}"), local: bytes("{}"), remote: bytes("not json"))
                == .merged(bytes("not json")))
        #expect(
            ThreeWayMerge.json(base: bytes("x"), local: bytes("{ }"), remote: bytes("{ }")) == .merged(bytes("{ }")))
    }

    @Test func remoteContributingNothingKeepsLocalBytes() {
        let local = "{\n    \"a\" : [1,   2],\n    \"b\": 1.50\n}\n"
        let outcome = ThreeWayMerge.json(
            base: bytes(#"{"a":[1,2],"b":1}"#), local: bytes(local), remote: bytes(#"{"b":1,"a":[1,2]}"#))
        #expect(text(outcome) == local)
    }

    @Test func prettyStyleOfLocalIsKept() {
        let base = """
            {
              "name": "x",
              "settings": {
                "theme": "dark",
                "size": 12
              },
              "list": [1, 2]
            }

            """
        let local = base.replacing("dark", with: "light")
        let remote = """
            {"name":"x","settings":{"theme":"dark","size":14,"font":{"family":"mono","sizes":[10,12]}},\
            "list":[1,2],"version":2,"empty":{},"none":[]}
            """
        let expected = """
            {
              "name": "x",
              "settings": {
                "theme": "light",
                "size": 14,
                "font": {
                  "family": "mono",
                  "sizes": [
                    10,
                    12
                  ]
                }
              },
              "list": [1, 2],
              "version": 2,
              "empty": {},
              "none": []
            }

            """
        #expect(text(ThreeWayMerge.json(base: bytes(base), local: bytes(local), remote: bytes(remote))) == expected)
    }

    @Test func tabsCRLFAndColonSpacingAreKept() {
        let local = "\u{FEFF}{\r\n\t\"a\" : 1,\r\n\t\"o\" : {\r\n\t\t\"x\" : 1\r\n\t}\r\n}"
        let remote = #"{"a":1,"o":{"x":1,"y":[true]},"b":"new"}"#
        let base = #"{"a":1,"o":{"x":1}}"#
        let expected =
            "\u{FEFF}{\r\n\t\"a\" : 1,\r\n\t\"o\" : {\r\n\t\t\"x\" : 1,\r\n\t\t\"y\" : [\r\n\t\t\ttrue\r\n\t\t]\r\n\t},\r\n\t\"b\" : \"new\"\r\n}"
        #expect(text(ThreeWayMerge.json(base: bytes(base), local: bytes(local), remote: bytes(remote))) == expected)
    }

    @Test func compactStyleWithSpaces() {
        let outcome = ThreeWayMerge.json(
            base: bytes(#"{"a": 1, "b": 2}"#), local: bytes(#"{"a": 1, "b": 3}"#),
            remote: bytes(#"{"a": 1, "b": 2, "c": [1,2]}"#))
        #expect(text(outcome) == #"{"a": 1, "b": 3, "c": [1, 2]}"#)
    }

    @Test func styleFromRemoteWhenLocalShowsNone() {
        // Local is an empty object: nothing to learn from, so remote's four-space style is used.
        let outcome = ThreeWayMerge.json(
            base: bytes(#"{"gone":1}"#), local: bytes("{}\n"), remote: bytes("{\n    \"gone\": 1,\n    \"new\": [1]\n}")
        )
        #expect(text(outcome) == "{\n    \"new\": [\n        1\n    ]\n}\n")
    }
}
