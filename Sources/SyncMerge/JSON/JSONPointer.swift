/// An RFC 6901 JSON Pointer: `""` (the whole document) or a run of `/`-prefixed reference
/// tokens, in each of which `~1` stands for `/` and `~0` for `~` (`/a~1b` names the key `a/b`).
///
/// A token names an object's member by its exact (decoded) key, or an array's element by its
/// index (`0` or digits without a leading zero); `-` (past an array's end) and anything else
/// applied to an array name nothing. At most `maximumLength` bytes: a pointer comes from a synced
/// file, and no document nests deeper than `JSONParser.maximumDepth` anyway.
public struct JSONPointer: Equatable, Sendable, CustomStringConvertible {
    /// The longest pointer accepted, in UTF-8 bytes.
    public static let maximumLength = 1024

    /// Why a text is not a JSON Pointer.
    public struct SyntaxError: Error, Equatable {
        public var message: String
    }

    /// The pointer as written.
    public let text: String
    /// The decoded reference tokens, as UTF-16 code units (like `JSONMember.key`).
    let tokens: [[UInt16]]

    public init(_ text: Substring) throws(SyntaxError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw SyntaxError(message: "longer than \(Self.maximumLength) bytes")
        }
        var tokens: [[UInt16]] = []
        if !text.isEmpty {
            guard text.first == "/" else { throw SyntaxError(message: "it must be empty or start with \"/\"") }
            for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
                tokens.append(try Self.decoded(raw))
            }
        }
        self.text = String(text)
        self.tokens = tokens
    }

    public var description: String { text }

    /// The value the pointer names in `root`, or nil when it names nothing there.
    func value(in root: JSONValue) -> JSONValue? {
        var value = root
        for token in tokens {
            switch value.kind {
            case .object(let object):
                guard let member = object.member(token) else { return nil }
                value = member.value
            case .array(let elements):
                guard let index = Self.arrayIndex(token), index < elements.count else { return nil }
                value = elements[index]
            case .string, .number, .bool, .null:
                return nil
            }
        }
        return value
    }

    /// `~0` → `~`, `~1` → `/`; any other `~` is an error.
    private static func decoded(_ raw: Substring) throws(SyntaxError) -> [UInt16] {
        var token = ""
        var escaped = false
        for character in raw {
            if escaped {
                guard character == "0" || character == "1" else {
                    throw SyntaxError(message: "\"~\" must be followed by 0 or 1 (~0 is \"~\", ~1 is \"/\")")
                }
                token.append(character == "0" ? "~" : "/")
                escaped = false
            } else if character == "~" {
                escaped = true
            } else {
                token.append(character)
            }
        }
        guard !escaped else {
            throw SyntaxError(message: "\"~\" must be followed by 0 or 1 (~0 is \"~\", ~1 is \"/\")")
        }
        return Array(token.utf16)
    }

    /// The array index a token names: `0`, or digits not starting with `0` (at most 18 of them).
    private static func arrayIndex(_ token: [UInt16]) -> Int? {
        guard !token.isEmpty, token.count <= 18, token == [0x30] || token.first != 0x30,
            token.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        return token.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }
}
