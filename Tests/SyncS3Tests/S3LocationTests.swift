import Foundation
import Testing

@testable import SyncS3

/// `s3://BUCKET[/PREFIX]?endpoint=URL&region=R` parses into where requests go; bad input is refused
/// with a reason, and credentials in the URL are refused outright.
@Suite struct S3LocationTests {
    @Test func pathStyleForAnEndpoint() throws {
        let location = try S3Location(parsing: "s3://chunks/team/a?endpoint=http://127.0.0.1:7480&region=default")
        #expect(location.bucket == "chunks")
        #expect(location.prefix == "team/a/")
        #expect(location.region == "default")
        #expect(location.addressing == .path)
        #expect(location.host == "127.0.0.1:7480")
        #expect(location.path(objectKey: location.objectKey("x/y")) == "/chunks/team/a/x/y")
        #expect(location.path(objectKey: nil) == "/chunks")
    }

    @Test func virtualHostStyleForAWS() throws {
        let location = try S3Location(parsing: "s3://my-bucket?region=eu-west-3")
        #expect(location.endpoint.absoluteString == "https://s3.eu-west-3.amazonaws.com")
        #expect(location.addressing == .virtual)
        #expect(location.host == "my-bucket.s3.eu-west-3.amazonaws.com")
        #expect(location.prefix == "")
        #expect(location.path(objectKey: "k") == "/k")
        #expect(location.path(objectKey: nil) == "/")
    }

    @Test func addressingCanBeChosen() throws {
        let location = try S3Location(parsing: "s3://b12?endpoint=https://minio.example:9000&addressing=virtual")
        #expect(location.host == "b12.minio.example:9000")
        #expect(location.region == "us-east-1")
        #expect(try S3Location(parsing: "s3://b12?addressing=path").host == "s3.us-east-1.amazonaws.com")
    }

    @Test func badInputIsRefused() {
        let cases: [(String, S3Location.ParseError)] = [
            ("https://bucket", .notS3URL),
            ("s3:///prefix", .notS3URL),
            ("s3://AB", .invalidBucket("ab")),  // URLComponents lowercases hosts? refused either way
            ("s3://key:secret@bucket", .credentialsInURL),
            ("s3://bucket?endpoint=ftp://x", .invalidEndpoint),
            ("s3://bucket?endpoint=http://user:pw@x", .invalidEndpoint),
            ("s3://bucket?endpoint=http://x/path", .invalidEndpoint),
            ("s3://bucket?region=EU_WEST", .invalidRegion),
            ("s3://bucket/a//b", .invalidPrefix),
            ("s3://bucket/a/../b", .invalidPrefix),
            ("s3://bucket?secret=x", .unknownParameter("secret")),
            ("s3://bucket?addressing=dns", .invalidAddressing("dns")),
        ]
        for (url, _) in cases {
            #expect(throws: S3Location.ParseError.self, "\(url)") { try S3Location(parsing: url) }
        }
        #expect(throws: S3Location.ParseError.credentialsInURL) { try S3Location(parsing: "s3://k:s@bucket") }
        #expect(throws: S3Location.ParseError.unknownParameter("secret")) {
            try S3Location(parsing: "s3://bucket?secret=x")
        }
        #expect(throws: S3Location.ParseError.invalidPrefix) { try S3Location(parsing: "s3://bucket/a/./b") }
    }

    @Test func bucketNames() {
        #expect(S3Location.isValidBucket("abc"))
        #expect(S3Location.isValidBucket("my.bucket-1"))
        for bad in ["ab", String(repeating: "a", count: 64), "-abc", "abc-", "a..b", "ABC", "a_b", "a b"] {
            #expect(!S3Location.isValidBucket(bad), "\(bad)")
        }
    }
}
