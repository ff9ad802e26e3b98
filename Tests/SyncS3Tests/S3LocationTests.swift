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
            ("s3://bucket?endpoint=http://user:pw@x", .credentialsInURL),
            ("s3://bucket?endpoint=http://x/path", .invalidEndpoint),
            ("s3://bucket?region=EU_WEST", .invalidRegion),
            ("s3://bucket/a//b", .invalidPrefix),
            ("s3://bucket/a/../b", .invalidPrefix),
            ("s3://bucket?secret=x", .credentialsInURL),
            ("s3://bucket?addressing=dns", .invalidAddressing("dns")),
        ]
        for (url, _) in cases {
            #expect(throws: S3Location.ParseError.self, "\(url)") { try S3Location(parsing: url) }
        }
        #expect(throws: S3Location.ParseError.credentialsInURL) { try S3Location(parsing: "s3://k:s@bucket") }
        #expect(throws: S3Location.ParseError.unknownParameter("colour")) {
            try S3Location(parsing: "s3://bucket?colour=x")
        }
        #expect(throws: S3Location.ParseError.invalidPrefix) { try S3Location(parsing: "s3://bucket/a/./b") }
    }

    /// `style=` chooses the addressing (`addressing=` is the same parameter); path style is the
    /// default for a custom endpoint.
    @Test func styleChoosesTheAddressing() throws {
        let base = "s3://chunks/p?endpoint=http://127.0.0.1:7480&region=default"
        #expect(try S3Location(parsing: base).addressing == .path)
        #expect(try S3Location(parsing: base + "&style=virtual").addressing == .virtual)
        #expect(try S3Location(parsing: base + "&style=virtual").host == "chunks.127.0.0.1:7480")
        #expect(try S3Location(parsing: base + "&style=path").addressing == .path)
        #expect(throws: S3Location.ParseError.invalidAddressing("dns")) { try S3Location(parsing: base + "&style=dns") }
    }

    /// Credentials in the URL are refused, wherever they are put, and the error never repeats them.
    @Test func credentialsAnywhereInTheURLAreRefused() {
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        let urls = [
            "s3://AKIDEXAMPLE:\(secret)@bucket?endpoint=http://127.0.0.1:7480",
            "s3://AKIDEXAMPLE@bucket",
            "s3://bucket?endpoint=http://AKIDEXAMPLE:\(secret)@127.0.0.1:7480",
            "s3://bucket?region=default&aws_secret_access_key=\(secret)",
            "s3://bucket?aws_access_key_id=AKIDEXAMPLE",
            "s3://bucket?secretKey=\(secret)",
            "s3://bucket?accessKey=AKIDEXAMPLE",
            "s3://bucket?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature=abc",
            "s3://bucket?session_token=xyz",
            "s3://bucket?password=\(secret)",
        ]
        for url in urls {
            #expect(throws: S3Location.ParseError.credentialsInURL, "\(url)") { try S3Location(parsing: url) }
        }
        let message = S3Location.ParseError.credentialsInURL.description
        #expect(message.contains("AWS_ACCESS_KEY_ID") && message.contains("credentials file"))
        // A secret pasted as a bare parameter is an unknown parameter, and is not echoed.
        do {
            _ = try S3Location(parsing: "s3://bucket?\(secret)")
            Issue.record("a bare secret was accepted")
        } catch {
            #expect(!error.description.contains(secret) && !error.description.contains("MDENG"), "\(error)")
        }
    }

    @Test func bucketNames() {
        #expect(S3Location.isValidBucket("abc"))
        #expect(S3Location.isValidBucket("my.bucket-1"))
        for bad in ["ab", String(repeating: "a", count: 64), "-abc", "abc-", "a..b", "ABC", "a_b", "a b"] {
            #expect(!S3Location.isValidBucket(bad), "\(bad)")
        }
    }
}
