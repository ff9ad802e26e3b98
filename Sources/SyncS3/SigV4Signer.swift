import Crypto
import Foundation

/// Credentials that sign requests. Their description never shows the secret or the session token,
/// so a credential that ends up in a log or an error message reveals only the access key id.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public let accessKeyID: String
    public let secretAccessKey: String
    public let sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String { "S3Credentials(accessKeyID: \(accessKeyID), secret: <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["accessKeyID": accessKeyID]) }
}

/// One request as AWS Signature Version 4 sees it: the method, the path *before* percent-encoding
/// (S3 keys are encoded once, here, never twice), the query parameters *before* encoding, the
/// headers to sign (`host` and `x-amz-date` included) and the payload's hash.
public struct SigV4Request: Sendable, Equatable {
    public var method: String
    public var path: String
    public var query: [(name: String, value: String)]
    public var headers: [(name: String, value: String)]
    public var payloadHash: String

    /// The `x-amz-content-sha256` value of a request whose body is not hashed.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// The lowercase hex SHA-256 of a body, the value of a signed payload.
    public static func hash(_ body: some DataProtocol) -> String { SigV4Signer.hex(SHA256.hash(data: body)) }

    public init(
        method: String, path: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)], payloadHash: String
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.payloadHash = payloadHash
    }

    public static func == (lhs: SigV4Request, rhs: SigV4Request) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.payloadHash == rhs.payloadHash
            && lhs.query.map { [$0.name, $0.value] } == rhs.query.map { [$0.name, $0.value] }
            && lhs.headers.map { [$0.name, $0.value] } == rhs.headers.map { [$0.name, $0.value] }
    }
}

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for one region and service. Pure and
/// deterministic: the caller passes the date (the same one it sends as `x-amz-date`), so the
/// published test vectors can be checked byte for byte.
public struct SigV4Signer: Sendable {
    public let region: String
    public let service: String

    public init(region: String, service: String = "s3") {
        self.region = region
        self.service = service
    }

    /// `20150830T123600Z`: the `x-amz-date` form of a date, in UTC.
    public static func amzDate(_ date: Date) -> String {
        let parts = utcParts(date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", parts.0, parts.1, parts.2, parts.3, parts.4, parts.5)
    }

    /// `20150830`: the credential scope's date.
    public static func scopeDate(_ date: Date) -> String { String(amzDate(date).prefix(8)) }

    /// The canonical request: method, encoded path, sorted encoded query, canonical headers,
    /// signed header names and the payload hash, one per line.
    public func canonicalRequest(_ request: SigV4Request) -> String {
        let path = request.path.isEmpty ? "/" : request.path
        return [
            request.method,
            Self.uriEncode(path, encodeSlash: false),
            Self.canonicalQuery(request.query),
            canonicalHeaders(request.headers).map { "\($0.name):\($0.value)\n" }.joined(),
            signedHeaders(request.headers),
            request.payloadHash,
        ].joined(separator: "\n")
    }

    /// `AWS4-HMAC-SHA256`, the date, the credential scope and the canonical request's hash.
    public func stringToSign(_ request: SigV4Request, date: Date) -> String {
        [
            "AWS4-HMAC-SHA256",
            Self.amzDate(date),
            scope(date),
            Self.hex(SHA256.hash(data: Data(canonicalRequest(request).utf8))),
        ].joined(separator: "\n")
    }

    /// The key derived from the secret for one day, region and service.
    public func signingKey(secret: String, date: Date) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(secret)".utf8))
        for part in [Self.scopeDate(date), region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    /// The lowercase hex signature of a request.
    public func signature(_ request: SigV4Request, credentials: S3Credentials, date: Date) -> String {
        let key = signingKey(secret: credentials.secretAccessKey, date: date)
        let toSign = Data(stringToSign(request, date: date).utf8)
        return Self.hex(HMAC<SHA256>.authenticationCode(for: toSign, using: key))
    }

    /// The value of the `Authorization` header.
    public func authorization(_ request: SigV4Request, credentials: S3Credentials, date: Date) -> String {
        "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope(date)), "
            + "SignedHeaders=\(signedHeaders(request.headers)), "
            + "Signature=\(signature(request, credentials: credentials, date: date))"
    }

    /// `20150830/us-east-1/service/aws4_request`.
    public func scope(_ date: Date) -> String { "\(Self.scopeDate(date))/\(region)/\(service)/aws4_request" }

    /// Lowercase names, sorted; values trimmed with inner runs of spaces folded to one; a name
    /// given several times keeps its values in order, joined by commas.
    func canonicalHeaders(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var merged: [String: [String]] = [:]
        for header in headers {
            let value = header.value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
                .joined(separator: " ")
            merged[header.name.lowercased(), default: []].append(value)
        }
        return merged.keys.sorted().map { ($0, merged[$0]!.joined(separator: ",")) }
    }

    func signedHeaders(_ headers: [(name: String, value: String)]) -> String {
        Set(headers.map { $0.name.lowercased() }).sorted().joined(separator: ";")
    }

    /// Each name and value encoded, pairs sorted by encoded name then value, joined by `&`.
    static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        let encoded: [(String, String)] = query.map { pair in
            (uriEncode(pair.name, encodeSlash: true), uriEncode(pair.value, encodeSlash: true))
        }
        // Encoded text is ASCII, so String order is byte order here.
        let sorted = encoded.sorted { (a: (String, String), b: (String, String)) -> Bool in
            a.0 == b.0 ? a.1 < b.1 : a.0 < b.0
        }
        return sorted.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// S3's `UriEncode`: every byte of the UTF-8 form except `A-Z a-z 0-9 - . _ ~` (and `/` when
    /// `encodeSlash` is false) becomes `%XY` with uppercase hex; a space is `%20`, never `+`.
    public static func uriEncode(_ string: String, encodeSlash: Bool) -> String {
        var out = ""
        out.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            if unreserved[Int(byte)] || (byte == UInt8(ascii: "/") && !encodeSlash) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// `A-Z a-z 0-9 - . _ ~`, indexed by byte.
    private static let unreserved: [Bool] = (0..<256).map { value in
        let byte = UInt8(value)
        if let scalar = Unicode.Scalar(UInt32(byte)), scalar.isASCII, "-._~".unicodeScalars.contains(scalar) {
            return true
        }
        return (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    private static func utcParts(_ date: Date) -> (Int, Int, Int, Int, Int, Int) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return (c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }
}
