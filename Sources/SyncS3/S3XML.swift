/// One page of a ListObjectsV2 answer.
public struct S3ListPage: Sendable, Equatable {
    public struct Object: Sendable, Equatable {
        /// The key relative to the location's prefix.
        public let key: String
        public let size: Int64
        /// The ETag without its quotes.
        public let etag: String
    }
    public let objects: [Object]
    /// The token of the next page, when the answer was truncated.
    public let continuationToken: String?
}

/// The little XML S3 answers with, read without an XML library: the answers are flat and
/// machine-written, so elements are found by name and their text unescaped. Anything that does
/// not parse is an `invalidResponse`, never an empty list.
enum S3XML {
    /// The ListObjectsV2 page in `xml`, keys stripped of `prefix` (a key outside it is an error).
    static func listPage(_ xml: String, prefix: String) throws(S3Error) -> S3ListPage {
        guard xml.contains("<ListBucketResult") else { throw .invalidResponse("not a ListBucketResult") }
        var objects: [S3ListPage.Object] = []
        for contents in elements("Contents", in: xml) {
            guard let key = text("Key", in: contents), let sizeText = text("Size", in: contents),
                let size = Int64(sizeText), size >= 0
            else { throw .invalidResponse("a listed object lacks its key or size") }
            guard key.hasPrefix(prefix) else { throw .invalidResponse("a listed key is outside the prefix") }
            let etag = unquoted(text("ETag", in: contents) ?? "")
            objects.append(.init(key: String(key.dropFirst(prefix.count)), size: size, etag: etag))
        }
        let truncated = text("IsTruncated", in: xml) == "true"
        let token = truncated ? text("NextContinuationToken", in: xml) : nil
        if truncated, token == nil { throw .invalidResponse("a truncated list without a continuation token") }
        return S3ListPage(objects: objects, continuationToken: token)
    }

    /// The `<Code>` of an error body, if it has one.
    static func errorCode(_ xml: String) -> String? { text("Code", in: xml) }

    /// `"abc"` → `abc` (ETags come quoted in headers and XML).
    static func unquoted(_ etag: String) -> String {
        etag.count >= 2 && etag.hasPrefix("\"") && etag.hasSuffix("\"") ? String(etag.dropFirst().dropLast()) : etag
    }

    /// The raw inner text of each `<name>…</name>` in order (no attributes expected).
    static func elements(_ name: String, in xml: String) -> [Substring] {
        var found: [Substring] = []
        var rest = xml[...]
        let open = "<\(name)>"
        let close = "</\(name)>"
        while let start = rest.range(of: open), let end = rest[start.upperBound...].range(of: close) {
            found.append(rest[start.upperBound..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// The unescaped text of the first `<name>…</name>`.
    static func text(_ name: String, in xml: some StringProtocol) -> String? {
        elements(name, in: String(xml)).first.flatMap { unescape($0) }
    }

    /// The five predefined entities and numeric references; `nil` for an unknown or bad one.
    static func unescape(_ text: Substring) -> String? {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";") else { return nil }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let hex = entity.hasPrefix("#x") || entity.hasPrefix("#X")
                guard entity.hasPrefix("#"),
                    let value = UInt32(entity.dropFirst(hex ? 2 : 1), radix: hex ? 16 : 10),
                    let scalar = Unicode.Scalar(value)
                else { return nil }
                out.unicodeScalars.append(scalar)
            }
            rest = rest[rest.index(after: semi)...]
        }
        return out + rest
    }
}
