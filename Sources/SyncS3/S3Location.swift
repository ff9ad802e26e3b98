import Foundation

/// Where objects live: an endpoint, a region, a bucket, an optional key prefix and how the bucket
/// is addressed. Parsed from `s3://BUCKET[/PREFIX]?endpoint=URL&region=R[&style=path|virtual]`
/// (`addressing=` is the same parameter); the URL carries no credentials (they come from the
/// environment or a credentials file): user info, or a query parameter that looks like a key, a
/// secret, a token or a presigned signature, is refused as `credentialsInURL`.
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    /// Path style (`https://host/bucket/key`) suits self-hosted stores (Ceph RGW, MinIO, Garage);
    /// virtual-host style (`https://bucket.host/key`) is AWS's default.
    public enum Addressing: String, Sendable { case path, virtual }

    public let bucket: String
    /// Empty, or ends with `/`: every key the client is given is stored under it.
    public let prefix: String
    /// `http` or `https`, a host and an optional port; no path, no query, no user info.
    public let endpoint: URL
    public let region: String
    public let addressing: Addressing

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notS3URL
        case invalidBucket(String)
        case invalidEndpoint, invalidRegion, invalidPrefix
        case credentialsInURL
        case unknownParameter(String)
        case invalidAddressing(String)

        public var description: String {
            switch self {
            case .notS3URL: "not an s3://BUCKET[/PREFIX]?endpoint=URL&region=R URL"
            case .invalidBucket(let name): "invalid bucket name \"\(name)\" (3-63 of a-z 0-9 . -)"
            case .invalidEndpoint: "the endpoint must be an http or https URL with a host and no path"
            case .invalidRegion: "invalid region (a-z 0-9 -)"
            case .invalidPrefix: "invalid key prefix (no empty segment, no . or .. segment, no control character)"
            case .credentialsInURL:
                "credentials do not belong in the URL: use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a credentials file"
            case .unknownParameter(let name):
                "unknown parameter \(Self.printable(name)) (endpoint, region, style)"
            case .invalidAddressing(let value): "style must be path or virtual, not \(Self.printable(value))"
            }
        }

        /// `text` quoted when it is a short plain word; otherwise not echoed (it could be a secret
        /// pasted in the wrong place, or control characters).
        static func printable(_ text: String) -> String {
            let plain =
                text.utf8.count <= 24
                && text.unicodeScalars.allSatisfy {
                    $0.isASCII && ($0.properties.isAlphabetic || "0123456789._-".unicodeScalars.contains($0))
                }
            return plain ? "\"\(text)\"" : "(\(text.count) characters, not shown)"
        }
    }

    public init(
        bucket: String, prefix: String = "", endpoint: URL? = nil, region: String = "us-east-1",
        addressing: Addressing? = nil
    ) throws(ParseError) {
        guard Self.isValidBucket(bucket) else { throw .invalidBucket(bucket) }
        guard !region.isEmpty, region.utf8.allSatisfy({ Self.isLowerAlnum($0) || $0 == UInt8(ascii: "-") }) else {
            throw .invalidRegion
        }
        let endpoint = endpoint ?? URL(string: "https://s3.\(region).amazonaws.com")
        guard let endpoint, let scheme = endpoint.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = endpoint.host, !host.isEmpty, endpoint.user == nil, endpoint.password == nil,
            endpoint.query == nil, endpoint.fragment == nil, endpoint.path.isEmpty || endpoint.path == "/"
        else { throw .invalidEndpoint }
        self.bucket = bucket
        self.prefix = try Self.normalizedPrefix(prefix)
        self.endpoint = endpoint
        self.region = region
        // A bucket with dots breaks TLS wildcard certificates in virtual-host style.
        self.addressing = addressing ?? (endpoint.host?.hasSuffix("amazonaws.com") == true ? .virtual : .path)
    }

    /// Parses `s3://BUCKET[/PREFIX]?endpoint=URL&region=R[&style=path|virtual]`. Without `style`,
    /// an `amazonaws.com` endpoint (or none: AWS) is virtual-host style, any other path style.
    public init(parsing string: String) throws(ParseError) {
        // `KEY:SECRET@` before the bucket, even when the secret's `/` breaks the URL's syntax.
        let beforeQuery = string.prefix { $0 != "?" }
        if let at = beforeQuery.firstIndex(of: "@"), beforeQuery[..<at].dropFirst("s3://".count).contains(":") {
            throw .credentialsInURL
        }
        guard let components = URLComponents(string: string), components.scheme?.lowercased() == "s3",
            let bucket = components.host, !bucket.isEmpty
        else { throw .notS3URL }
        guard components.user == nil, components.password == nil,
            !(components.queryItems ?? []).contains(where: { Self.looksLikeCredential($0.name) })
        else { throw .credentialsInURL }
        var endpoint: URL?
        var region = "us-east-1"
        var addressing: Addressing?
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "endpoint":
                // An endpoint has no path, so an `@` in it can only end user info.
                guard !value.contains("@") else { throw .credentialsInURL }
                guard let url = URL(string: value) else { throw .invalidEndpoint }
                endpoint = url
            case "region": region = value
            case "addressing", "style":
                guard let parsed = Addressing(rawValue: value) else { throw .invalidAddressing(value) }
                addressing = parsed
            default: throw .unknownParameter(item.name)
            }
        }
        try self.init(
            bucket: bucket, prefix: String(components.path.drop(while: { $0 == "/" })), endpoint: endpoint,
            region: region, addressing: addressing)
    }

    /// The full object key of a key given to the client.
    public func objectKey(_ key: String) -> String { prefix + key }

    /// The host the request goes to (with the port when the endpoint has one).
    public var host: String {
        let base = endpoint.host ?? ""
        let name = addressing == .virtual ? "\(bucket).\(base)" : base
        return endpoint.port.map { "\(name):\($0)" } ?? name
    }

    /// The request path of an object key (not yet percent-encoded), or of the bucket for `nil`.
    public func path(objectKey: String?) -> String {
        let bucketPath = addressing == .path ? "/\(bucket)" : ""
        guard let objectKey else { return bucketPath.isEmpty ? "/" : bucketPath }
        return "\(bucketPath)/\(objectKey)"
    }

    public var description: String {
        "s3://\(bucket)/\(prefix) at \(endpoint.absoluteString) (\(region), \(addressing.rawValue) style)"
    }

    /// Whether a query parameter's name is a credential's (AWS's own names, presigned-URL
    /// parameters, and anything naming a key, a secret, a token or a password).
    static func looksLikeCredential(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return lowered.hasPrefix("x-amz-") || lowered.hasPrefix("aws_") || lowered == "signature"
            || ["secret", "password", "passwd", "token", "credential", "accesskey", "access_key", "access-key"]
                .contains(where: lowered.contains)
    }

    static func isValidBucket(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last,
            isLowerAlnum(first), isLowerAlnum(last), !name.contains("..")
        else { return false }
        return bytes.allSatisfy { isLowerAlnum($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    private static func isLowerAlnum(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func normalizedPrefix(_ prefix: String) throws(ParseError) -> String {
        let trimmed = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        if trimmed.isEmpty { return "" }
        let segments = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }),
            !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw .invalidPrefix }
        return trimmed + "/"
    }
}
