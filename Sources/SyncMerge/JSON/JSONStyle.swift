/// How a JSON document is laid out, detected from a document so that a merged document reads
/// like the local one.
struct JSONStyle: Equatable {
    /// One level of indentation (spaces or tabs), or nil for compact output (all on one line).
    var indent: [UInt8]?
    /// The line break of pretty output: "\n" or "\r\n".
    var newline: [UInt8]
    /// What stands between a key and its value, e.g. ": ", ":" or " : ".
    var colon: [UInt8]
    /// What follows a comma in compact output, e.g. "" or " ".
    var comma: [UInt8]

    /// When no version shows a style: two spaces, "\n", ": ".
    static let standard = JSONStyle(indent: Array("  ".utf8), newline: [0x0A], colon: Array(": ".utf8), comma: [])

    /// The style of `document`, or nil when it has no non-empty object or array to learn from.
    ///
    /// Pretty or compact, the line break and the indentation come from the first non-empty object
    /// (in document order; else the first non-empty array): pretty when a line break precedes its
    /// first member, the indentation being what that member's line adds to the line of the
    /// opening brace. The colon is the text between the first key and its value; the compact
    /// comma the whitespace after the first comma between values.
    static func detect(_ document: JSONDocument) -> JSONStyle? {
        let bytes = document.bytes
        guard
            let container = firstContainer(document.root, objects: true)
                ?? firstContainer(document.root, objects: false),
            let firstChild = children(container).first
        else { return nil }
        var style = standard
        let open = container.span.lowerBound
        let gap = bytes[(open + 1)..<firstChild.lowerBound]
        if let lineBreak = gap.lastIndex(of: 0x0A) {
            style.newline = lineBreak > open + 1 && bytes[lineBreak - 1] == 0x0D ? [0x0D, 0x0A] : [0x0A]
            let childIndent = bytes[(lineBreak + 1)..<firstChild.lowerBound]
            let ownIndent = indentation(ofLineAt: open, in: bytes)
            if childIndent.count > ownIndent.count && childIndent.starts(with: ownIndent) {
                style.indent = Array(childIndent.dropFirst(ownIndent.count))
            }
        } else {
            style.indent = nil
            style.colon = [UInt8(ascii: ":")]
            let spans = children(container)
            if spans.count >= 2 {
                let between = bytes[spans[0].upperBound..<spans[1].lowerBound]
                if let comma = between.firstIndex(of: UInt8(ascii: ",")) {
                    style.comma = Array(bytes[(comma + 1)..<spans[1].lowerBound])
                }
            }
        }
        if let member = firstMember(document.root) {
            style.colon = Array(bytes[member.keySpan.upperBound..<member.value.span.lowerBound])
        }
        return style
    }

    /// The first non-empty object (or array) in document order.
    private static func firstContainer(_ value: JSONValue, objects: Bool) -> JSONValue? {
        switch value.kind {
        case .object(let object):
            if objects && !object.members.isEmpty { return value }
            for member in object.members {
                if let found = firstContainer(member.value, objects: objects) { return found }
            }
        case .array(let elements):
            if !objects && !elements.isEmpty { return value }
            for element in elements {
                if let found = firstContainer(element, objects: objects) { return found }
            }
        case .string, .number, .bool, .null: break
        }
        return nil
    }

    private static func firstMember(_ value: JSONValue) -> JSONMember? {
        switch value.kind {
        case .object(let object):
            if let first = object.members.first { return first }
        case .array(let elements):
            for element in elements {
                if let found = firstMember(element) { return found }
            }
        case .string, .number, .bool, .null: break
        }
        return nil
    }

    /// Where each child of a container starts and ends (an object member from its key).
    private static func children(_ container: JSONValue) -> [Range<Int>] {
        switch container.kind {
        case .object(let object): return object.members.map { $0.keySpan.lowerBound..<$0.value.span.upperBound }
        case .array(let elements): return elements.map(\.span)
        case .string, .number, .bool, .null: return []
        }
    }

    /// The spaces and tabs at the start of the line holding `offset`.
    private static func indentation(ofLineAt offset: Int, in bytes: [UInt8]) -> ArraySlice<UInt8> {
        var lineStart = offset
        while lineStart > 0 && bytes[lineStart - 1] != 0x0A { lineStart -= 1 }
        var end = lineStart
        while end < offset && (bytes[end] == 0x20 || bytes[end] == 0x09) { end += 1 }
        return bytes[lineStart..<end]
    }
}
