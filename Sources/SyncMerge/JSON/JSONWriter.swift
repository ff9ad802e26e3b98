/// The merged document before it is written.
indirect enum MergedJSON {
    /// A value of the local document, written as its exact bytes there (it sits at the same depth
    /// in the result, so its own layout still fits).
    case local(JSONValue)
    /// A value of another version, written in the local style (strings and numbers keep their
    /// exact text).
    case other(JSONValue, document: [UInt8])
    /// An object merged member by member: local's members in local's order, then remote's new ones.
    case object([MergedMember])
}

struct MergedMember {
    /// The key's exact text, quotes included.
    var key: ArraySlice<UInt8>
    var value: MergedJSON
}

/// Writes merged JSON in a `JSONStyle`.
struct JSONWriter {
    let style: JSONStyle
    let localBytes: [UInt8]
    private(set) var output: [UInt8] = []

    init(style: JSONStyle, localBytes: [UInt8]) {
        self.style = style
        self.localBytes = localBytes
    }

    mutating func write(_ node: MergedJSON, depth: Int) {
        switch node {
        case .local(let value):
            output += localBytes[value.span]
        case .other(let value, let document):
            write(value, in: document, depth: depth)
        case .object(let members):
            writeContainer("{", "}", count: members.count, depth: depth) { writer, index in
                writer.output += members[index].key
                writer.output += writer.style.colon
                writer.write(members[index].value, depth: depth + 1)
            }
        }
    }

    private mutating func write(_ value: JSONValue, in document: [UInt8], depth: Int) {
        switch value.kind {
        case .object(let object):
            writeContainer("{", "}", count: object.members.count, depth: depth) { writer, index in
                let member = object.members[index]
                writer.output += document[member.keySpan]
                writer.output += writer.style.colon
                writer.write(member.value, in: document, depth: depth + 1)
            }
        case .array(let elements):
            writeContainer("[", "]", count: elements.count, depth: depth) { writer, index in
                writer.write(elements[index], in: document, depth: depth + 1)
            }
        case .string, .number, .bool, .null:
            output += document[value.span]
        }
    }

    private mutating func writeContainer(
        _ open: Unicode.Scalar, _ close: Unicode.Scalar, count: Int, depth: Int,
        element: (inout JSONWriter, Int) -> Void
    ) {
        output.append(UInt8(ascii: open))
        if count > 0 {
            for index in 0..<count {
                if index > 0 {
                    output.append(UInt8(ascii: ","))
                    if style.indent == nil { output += style.comma }
                }
                newline(depth: depth + 1)
                element(&self, index)
            }
            newline(depth: depth)
        }
        output.append(UInt8(ascii: close))
    }

    private mutating func newline(depth: Int) {
        guard let indent = style.indent else { return }
        output += style.newline
        for _ in 0..<depth { output += indent }
    }
}
