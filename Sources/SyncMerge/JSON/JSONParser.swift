/// A strict RFC 8259 parser that keeps positions: UTF-8 input, no comments, no trailing commas,
/// no leading zeros, no control characters in strings. Stricter than RFC 8259 in two ways, both
/// to keep merges well defined: an object with the same key twice is rejected, and values nest at
/// most `maximumDepth` deep. A UTF-8 byte order mark before the value is allowed (RFC 8259 lets
/// parsers ignore it).
enum JSONParser {
    static let maximumDepth = 512

    /// The document, or nil when `bytes` is not valid JSON.
    static func parse(_ bytes: [UInt8]) -> JSONDocument? {
        let root: JSONValue? = bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer)
            return scanner.document()
        }
        return root.map { JSONDocument(bytes: bytes, root: $0) }
    }

    /// True when `bytes` is empty or only JSON whitespace.
    static func isBlank(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { Scanner.isWhitespace($0) }
    }
}

private struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    mutating func document() -> JSONValue? {
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        guard let root = value() else { return nil }
        skipWhitespace()
        return index == bytes.count ? root : nil
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while index < bytes.count && Self.isWhitespace(bytes[index]) { index += 1 }
    }

    private mutating func value() -> JSONValue? {
        guard let byte = current else { return nil }
        let start = index
        switch byte {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string().map { JSONValue(kind: .string($0), span: start..<index) }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return nil
        }
    }

    private mutating func literal(_ text: StaticString, _ kind: JSONValue.Kind) -> JSONValue? {
        let start = index
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return nil }
        for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return nil }
        index += count
        return JSONValue(kind: kind, span: start..<index)
    }

    private mutating func object() -> JSONValue? {
        let start = index
        guard depth < JSONParser.maximumDepth else { return nil }
        depth += 1
        defer { depth -= 1 }
        index += 1
        var members: [JSONMember] = []
        var keys: [[UInt16]: Int] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return JSONValue(kind: .object(JSONObject(members: [], index: [:])), span: start..<index)
        }
        while true {
            let keyStart = index
            guard current == UInt8(ascii: "\""), let key = string() else { return nil }
            let keySpan = keyStart..<index
            guard keys[key] == nil else { return nil }  // a duplicate key
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            guard let member = value() else { return nil }
            keys[key] = members.count
            members.append(JSONMember(key: key, keySpan: keySpan, value: member))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                return JSONValue(kind: .object(JSONObject(members: members, index: keys)), span: start..<index)
            default: return nil
            }
        }
    }

    private mutating func array() -> JSONValue? {
        let start = index
        guard depth < JSONParser.maximumDepth else { return nil }
        depth += 1
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return JSONValue(kind: .array([]), span: start..<index)
        }
        while true {
            guard let element = value() else { return nil }
            elements.append(element)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                index += 1
                return JSONValue(kind: .array(elements), span: start..<index)
            default: return nil
            }
        }
    }

    /// A string at `index` (on its opening quote), decoded to UTF-16 code units.
    private mutating func string() -> [UInt16]? {
        index += 1
        var units: [UInt16] = []
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return units
            case UInt8(ascii: "\\"):
                guard let unit = escape() else { return nil }
                units.append(unit)
            case 0..<0x20:
                return nil
            case 0x20..<0x80:
                units.append(UInt16(byte))
                index += 1
            default:
                guard let length = UTF8Sequence.length(bytes, at: index) else { return nil }
                let scalar = UTF8Sequence.scalar(bytes, at: index, length: length)
                if scalar < 0x10000 {
                    units.append(UInt16(scalar))
                } else {
                    units.append(UInt16(0xD800 + ((scalar - 0x10000) >> 10)))
                    units.append(UInt16(0xDC00 + ((scalar - 0x10000) & 0x3FF)))
                }
                index += length
            }
        }
        return nil
    }

    /// The escape sequence at `index` (on its backslash) as one UTF-16 code unit.
    private mutating func escape() -> UInt16? {
        guard index + 1 < bytes.count else { return nil }
        let letter = bytes[index + 1]
        index += 2
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return UInt16(letter)
        case UInt8(ascii: "b"): return 0x08
        case UInt8(ascii: "f"): return 0x0C
        case UInt8(ascii: "n"): return 0x0A
        case UInt8(ascii: "r"): return 0x0D
        case UInt8(ascii: "t"): return 0x09
        case UInt8(ascii: "u"):
            guard index + 4 <= bytes.count else { return nil }
            var unit: UInt16 = 0
            for _ in 0..<4 {
                guard let digit = Self.hexValue(bytes[index]) else { return nil }
                unit = unit << 4 | UInt16(digit)
                index += 1
            }
            return unit
        default: return nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() -> JSONValue? {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits() > 0 else { return nil }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        let lexeme = bytes[start..<index]
        return JSONValue(kind: .number(JSONNumber(lexeme: Array(lexeme)[...])), span: start..<index)
    }

    private mutating func digits() -> Int {
        let start = index
        while let byte = current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }
}
