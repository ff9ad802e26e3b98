/// A parsed JSON value and where it is in its document, so that unchanged values can be written
/// back byte for byte.
struct JSONValue {
    enum Kind {
        case object(JSONObject)
        case array([JSONValue])
        /// The decoded string as UTF-16 code units (exact, lone surrogates from `\u` escapes too).
        case string([UInt16])
        case number(JSONNumber)
        case bool(Bool)
        case null
    }

    var kind: Kind
    /// The bytes of the value in its document (a string's span includes its quotes).
    var span: Range<Int>

    /// Equal as JSON values: objects have the same keys with equal values (in any order), arrays
    /// equal elements in order, strings the same characters however escaped, numbers the same
    /// decimal value however written (`1.0` equals `1` and `10e-1`).
    func isSame(as other: JSONValue) -> Bool {
        switch (kind, other.kind) {
        case (.object(let a), .object(let b)):
            guard a.members.count == b.members.count else { return false }
            return a.members.allSatisfy { member in
                b.member(member.key).map { $0.value.isSame(as: member.value) } ?? false
            }
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isSame(as: $1) }
        case (.string(let a), .string(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.null, .null): return true
        default: return false
        }
    }
}

/// A JSON object: its members in document order, and an index by decoded key (keys are unique).
struct JSONObject {
    var members: [JSONMember]
    var index: [[UInt16]: Int]

    func member(_ key: [UInt16]) -> JSONMember? { index[key].map { members[$0] } }
}

struct JSONMember {
    /// The decoded key.
    var key: [UInt16]
    /// The key's bytes in the document, quotes included.
    var keySpan: Range<Int>
    var value: JSONValue
}

/// A parsed JSON text: its bytes and its root value.
struct JSONDocument {
    let bytes: [UInt8]
    let root: JSONValue
}
