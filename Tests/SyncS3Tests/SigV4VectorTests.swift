import Foundation
import Testing

@testable import SyncS3

/// The signer against published vectors, byte for byte:
/// - AWS's "Signature Version 4 test suite" (docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html;
///   the files as mirrored in bazelbuild/bazel third_party/aws-sig-v4-test-suite): service `service`,
///   us-east-1, AKIDEXAMPLE, 2015-08-30T12:36:00Z;
/// - the four examples of Amazon S3's "Signature Calculations for the Authorization Header:
///   Transferring Payload in a Single Chunk" (docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html):
///   AKIAIOSFODNN7EXAMPLE, examplebucket, 2013-05-24;
/// - 40 random S3 requests signed by botocore's own `S3SigV4Auth` (Fixtures/botocore-vectors.json,
///   made by Fixtures/generate_botocore_vectors.py): keys and query parameters with reserved,
///   non-ASCII and percent characters, folded header values, session tokens, UNSIGNED-PAYLOAD.
@Suite struct SigV4VectorTests {
    static let suiteCredentials = S3Credentials(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)  // 2015-08-30T12:36:00Z
    static let suiteSigner = SigV4Signer(region: "us-east-1", service: "service")
    static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    struct SuiteCase: Sendable, CustomTestStringConvertible {
        let name: String
        let method: String
        let query: [(name: String, value: String)]
        let extraHeaders: [(name: String, value: String)]
        let body: String
        let signedHeaders: String
        let signature: String
        var testDescription: String { name }
    }

    static let suiteCases: [SuiteCase] = [
        SuiteCase(
            name: "get-vanilla", method: "GET", query: [], extraHeaders: [], body: "",
            signedHeaders: "host;x-amz-date",
            signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        SuiteCase(
            name: "get-vanilla-query-order-key-case", method: "GET",
            query: [("Param2", "value2"), ("Param1", "value1")], extraHeaders: [], body: "",
            signedHeaders: "host;x-amz-date",
            signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
        SuiteCase(
            name: "get-vanilla-query-unreserved", method: "GET",
            query: [
                (
                    "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                    "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                )
            ], extraHeaders: [], body: "", signedHeaders: "host;x-amz-date",
            signature: "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"),
        SuiteCase(
            name: "get-vanilla-utf8-query", method: "GET", query: [("\u{1234}", "bar")], extraHeaders: [], body: "",
            signedHeaders: "host;x-amz-date",
            signature: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
        SuiteCase(
            name: "post-vanilla", method: "POST", query: [], extraHeaders: [], body: "",
            signedHeaders: "host;x-amz-date",
            signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
        SuiteCase(
            name: "post-vanilla-empty-query-value", method: "POST", query: [("Param1", "value1")], extraHeaders: [],
            body: "", signedHeaders: "host;x-amz-date",
            signature: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
        SuiteCase(
            name: "post-header-key-sort", method: "POST", query: [], extraHeaders: [("My-Header1", "value1")],
            body: "", signedHeaders: "host;my-header1;x-amz-date",
            signature: "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"),
        SuiteCase(
            name: "post-x-www-form-urlencoded", method: "POST", query: [],
            extraHeaders: [("Content-Type", "application/x-www-form-urlencoded")], body: "Param1=value1",
            signedHeaders: "content-type;host;x-amz-date",
            signature: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"),
        SuiteCase(
            name: "post-sts-header-before", method: "POST", query: [],
            extraHeaders: [
                (
                    "X-Amz-Security-Token",
                    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
                )
            ], body: "", signedHeaders: "host;x-amz-date;x-amz-security-token",
            signature: "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"),
    ]

    @Test(arguments: suiteCases) func awsTestSuite(_ vector: SuiteCase) {
        let request = SigV4Request(
            method: vector.method, path: "/", query: vector.query,
            headers: [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z")] + vector.extraHeaders,
            payloadHash: SigV4Request.hash(Data(vector.body.utf8)))
        let expected =
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            + "SignedHeaders=\(vector.signedHeaders), Signature=\(vector.signature)"
        #expect(
            Self.suiteSigner.authorization(request, credentials: Self.suiteCredentials, date: Self.suiteDate)
                == expected)
    }

    /// The suite's published intermediate files for post-x-www-form-urlencoded (.creq and .sts).
    @Test func awsTestSuiteCanonicalRequestAndStringToSign() {
        let request = SigV4Request(
            method: "POST", path: "/",
            headers: [
                ("Content-Type", "application/x-www-form-urlencoded"), ("Host", "example.amazonaws.com"),
                ("X-Amz-Date", "20150830T123600Z"),
            ], payloadHash: SigV4Request.hash(Data("Param1=value1".utf8)))
        let canonical = Self.suiteSigner.canonicalRequest(request)
        #expect(
            canonical
                == "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n"
                + "x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n"
                + "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
        let toSign = Self.suiteSigner.stringToSign(request, date: Self.suiteDate).split(separator: "\n")
        #expect(
            toSign.prefix(3) == ["AWS4-HMAC-SHA256", "20150830T123600Z", "20150830/us-east-1/service/aws4_request"])
        #expect(toSign.count == 4 && toSign[3].count == 64)
    }

    static let s3Credentials = S3Credentials(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z

    struct S3Example: Sendable, CustomTestStringConvertible {
        let name: String
        let request: SigV4Request
        let signedHeaders: String
        let signature: String
        var testDescription: String { name }
    }

    static func s3Headers(_ extra: [(String, String)], hash: String) -> [(name: String, value: String)] {
        [
            ("Host", "examplebucket.s3.amazonaws.com"), ("x-amz-date", "20130524T000000Z"),
            ("x-amz-content-sha256", hash),
        ]
            + extra
    }

    static let s3Examples: [S3Example] = [
        S3Example(
            name: "GET Object",
            request: SigV4Request(
                method: "GET", path: "/test.txt", headers: s3Headers([("Range", "bytes=0-9")], hash: emptyHash),
                payloadHash: emptyHash),
            signedHeaders: "host;range;x-amz-content-sha256;x-amz-date",
            signature: "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
        S3Example(
            name: "PUT Object",
            request: SigV4Request(
                method: "PUT", path: "/test$file.text",
                headers: s3Headers(
                    [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                    hash: SigV4Request.hash(Data("Welcome to Amazon S3.".utf8))),
                payloadHash: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
            signedHeaders: "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
            signature: "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
        S3Example(
            name: "GET Bucket Lifecycle",
            request: SigV4Request(
                method: "GET", path: "/", query: [("lifecycle", "")], headers: s3Headers([], hash: emptyHash),
                payloadHash: emptyHash),
            signedHeaders: "host;x-amz-content-sha256;x-amz-date",
            signature: "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
        S3Example(
            name: "Get Bucket (List Objects)",
            request: SigV4Request(
                method: "GET", path: "/", query: [("max-keys", "2"), ("prefix", "J")],
                headers: s3Headers([], hash: emptyHash), payloadHash: emptyHash),
            signedHeaders: "host;x-amz-content-sha256;x-amz-date",
            signature: "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
    ]

    @Test(arguments: s3Examples) func s3DocumentationExamples(_ example: S3Example) {
        let signer = SigV4Signer(region: "us-east-1", service: "s3")
        let expected =
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            + "SignedHeaders=\(example.signedHeaders), Signature=\(example.signature)"
        #expect(signer.authorization(example.request, credentials: Self.s3Credentials, date: Self.s3Date) == expected)
    }

    struct BotocoreFile: Decodable {
        let botocore: String
        let vectors: [Vector]
        struct Vector: Decodable {
            let method, path, host, payloadHash, region, amzDate, canonicalRequest, authorization: String
            let query, headers: [[String]]
            let sessionToken: String?
        }
    }

    @Test func botocoreRandomRequests() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/botocore-vectors.json")
        let file = try JSONDecoder().decode(BotocoreFile.self, from: Data(contentsOf: url))
        #expect(file.vectors.count == 40)
        for vector in file.vectors {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
            let date = try #require(formatter.date(from: vector.amzDate))
            let request = SigV4Request(
                method: vector.method, path: vector.path, query: vector.query.map { ($0[0], $0[1]) },
                headers: [("Host", vector.host)] + vector.headers.map { ($0[0], $0[1]) },
                payloadHash: vector.payloadHash)
            let signer = SigV4Signer(region: vector.region, service: "s3")
            let credentials = S3Credentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                sessionToken: vector.sessionToken)
            #expect(signer.canonicalRequest(request) == vector.canonicalRequest, "\(vector.path)")
            #expect(signer.authorization(request, credentials: credentials, date: date) == vector.authorization)
        }
    }

    @Test func uriEncodingFollowsS3Rules() {
        #expect(SigV4Signer.uriEncode("a b+c/d~e_f.g-h", encodeSlash: false) == "a%20b%2Bc/d~e_f.g-h")
        #expect(SigV4Signer.uriEncode("a/b", encodeSlash: true) == "a%2Fb")
        #expect(SigV4Signer.uriEncode("é*", encodeSlash: true) == "%C3%A9%2A")
        #expect(SigV4Signer.uriEncode("%41", encodeSlash: false) == "%2541")  // encoded once, as given
    }

    @Test func credentialsNeverShowTheirSecret() {
        let credentials = S3Credentials(accessKeyID: "AKID", secretAccessKey: "SECRETVALUE", sessionToken: "TOKENVALUE")
        for text in [String(describing: credentials), String(reflecting: credentials), "\(credentials)"] {
            #expect(!text.contains("SECRETVALUE") && !text.contains("TOKENVALUE"))
        }
    }
}
