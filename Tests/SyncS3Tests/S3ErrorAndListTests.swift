import Foundation
import Testing

@testable import SyncS3

/// HTTP answers map to the three kinds callers act on (a transient failure is never "not found"),
/// retries back off exponentially with jitter, and ListObjectsV2 pages parse or are refused.
@Suite struct S3ErrorAndListTests {
    @Test func classification() {
        #expect(S3Error.classify(status: 404, code: "NoSuchKey", key: "k") == .notFound(key: "k"))
        #expect(S3Error.classify(status: 404, code: nil, key: "k") == .notFound(key: "k"))  // HEAD has no body
        #expect(S3Error.classify(status: 412, code: "PreconditionFailed", key: "k") == .preconditionFailed(key: "k"))
        #expect(
            S3Error.classify(status: 409, code: "ConditionalRequestConflict", key: "k") == .preconditionFailed(key: "k")
        )
        for status in [500, 502, 503, 504, 429, 408] {
            let error = S3Error.classify(status: status, code: nil, key: "k")
            #expect(error.isTransient, "\(status)")
            #expect(error != .notFound(key: "k"))
        }
        #expect(S3Error.classify(status: 503, code: "SlowDown", key: "k").isTransient)
        #expect(S3Error.classify(status: 400, code: "RequestTimeout", key: "k").isTransient)
        #expect(
            S3Error.classify(status: 403, code: "SignatureDoesNotMatch", key: "k")
                == .refused(status: 403, code: "SignatureDoesNotMatch"))
        #expect(
            S3Error.classify(status: 400, code: "InvalidArgument", key: "k")
                == .refused(status: 400, code: "InvalidArgument"))
        // A 404 about something else than the object (e.g. a proxy's page) is not "absent".
        #expect(!S3Error.classify(status: 404, code: "NoSuchUpload", key: "k").isTransient)
        #expect(S3Error.classify(status: 404, code: "NoSuchUpload", key: "k") != .notFound(key: "k"))
        // A 404 without an S3 error body to a GET is a proxy's page: worth retrying, not "absent".
        #expect(S3Error.classify(status: 404, code: nil, key: "k", method: "GET").isTransient)
        #expect(S3Error.classify(status: 404, code: nil, key: "k", method: "PUT").isTransient)
        // A missing bucket is a configuration error, not "every object is absent".
        #expect(
            S3Error.classify(status: 404, code: "NoSuchBucket", key: "k", method: "GET")
                == .refused(status: 404, code: "NoSuchBucket"))
    }

    @Test func backoffGrowsAndIsCapped() {
        let policy = S3RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(100), maxDelay: .milliseconds(500))
        #expect(policy.ceiling(afterAttempt: 0) == .milliseconds(100))
        #expect(policy.ceiling(afterAttempt: 1) == .milliseconds(200))
        #expect(policy.ceiling(afterAttempt: 2) == .milliseconds(400))
        #expect(policy.ceiling(afterAttempt: 3) == .milliseconds(500))
        #expect(policy.ceiling(afterAttempt: 100) == .milliseconds(500))
        #expect(policy.delay(afterAttempt: 1, unit: 0.5) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 1, unit: 0) == .zero)
        #expect(policy.shouldRetry(.transient("x"), afterAttempt: 2))
        #expect(!policy.shouldRetry(.transient("x"), afterAttempt: 3))
        #expect(!policy.shouldRetry(.notFound(key: "k"), afterAttempt: 0))
        #expect(!policy.shouldRetry(.refused(status: 403, code: nil), afterAttempt: 0))
        #expect(!policy.shouldRetry(.preconditionFailed(key: "k"), afterAttempt: 0))
    }

    static let page = """
        <?xml version="1.0" encoding="UTF-8"?>
        <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>\
        <KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>\
        <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\
        <Contents><Key>p/a&amp;b &lt;c&gt; &#233;&#x20AC;</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
        <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass></Contents>\
        <Contents><Key>p/z</Key><ETag>"00"</ETag><Size>0</Size></Contents></ListBucketResult>
        """

    @Test func listPageParses() throws {
        let page = try S3XML.listPage(Self.page, prefix: "p/")
        #expect(
            page.objects == [
                .init(key: "a&b <c> é€", size: 12, etag: "9b2cf535f27731c974343645a3985328"),
                .init(key: "z", size: 0, etag: "00"),
            ])
        #expect(page.continuationToken == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        let last = try S3XML.listPage(
            "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", prefix: "")
        #expect(last == S3ListPage(objects: [], continuationToken: nil))
    }

    @Test func unreadableListsAreErrorsNotEmptyPages() {
        let bad = [
            "<html>Bad gateway</html>",
            "<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",  // no size
            "<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
            "<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
            "<ListBucketResult><Contents><Key>other/k</Key><Size>1</Size></Contents></ListBucketResult>",
            "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
        ]
        for xml in bad {
            #expect(throws: S3Error.self, "\(xml)") { try S3XML.listPage(xml, prefix: "p/") }
        }
        #expect(
            S3XML.errorCode("<Error><Code>NoSuchKey</Code><Message>x</Message></Error>") == "NoSuchKey")
    }
}
