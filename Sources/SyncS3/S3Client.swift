import Foundation
import SyncBackend

/// A small S3 client for the object stores SyncFS keeps chunks in (AWS S3, Ceph RGW, MinIO,
/// Garage, Backblaze B2, Cloudflare R2): PUT (optionally only if absent), GET, HEAD, DELETE and
/// one page of ListObjectsV2, signed with AWS Signature Version 4, the payload always hashed.
///
/// Objects are at most `maxObjectSize` bytes (16 MiB by default, SyncFS's largest chunk), far under
/// S3's 5 GiB single-PUT limit, so there is no multipart upload. Transient failures (5xx, 429,
/// timeouts, no connection) are retried per `retryPolicy`, then reported as `S3Error.transient` —
/// never as `notFound`. Credentials are only ever put in the signature and the session-token
/// header; no error or description contains them.
public struct S3Client: Sendable {
    public let location: S3Location
    public let retryPolicy: S3RetryPolicy
    public let maxObjectSize: Int
    /// The time allowed for one attempt (connection, request and answer).
    public let requestTimeout: Duration
    private let credentials: S3Credentials
    private let transport: any S3Transport
    private let signer: SigV4Signer
    private let now: @Sendable () -> Date
    private let random: @Sendable () -> Double
    private let sleep: @Sendable (Duration) async throws -> Void

    public static let defaultMaxObjectSize = 16 << 20

    public struct ObjectInfo: Sendable, Equatable {
        public let size: Int64
        /// Without quotes (what `If-Match` wants on Ceph RGW).
        public let etag: String
    }

    public init(
        location: S3Location, credentials: S3Credentials, transport: any S3Transport,
        retryPolicy: S3RetryPolicy = S3RetryPolicy(), maxObjectSize: Int = defaultMaxObjectSize,
        requestTimeout: Duration = .seconds(30), now: @escaping @Sendable () -> Date = { Date() },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.location = location
        self.credentials = credentials
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.maxObjectSize = maxObjectSize
        self.requestTimeout = requestTimeout
        self.signer = SigV4Signer(region: location.region, service: "s3")
        self.now = now
        self.random = random
        self.sleep = sleep
    }

    /// Stores `data` at `key`. With `ifAbsent`, sends `If-None-Match: *` and throws
    /// `preconditionFailed` when the object already exists. Returns the new ETag (unquoted).
    ///
    /// A conditional PUT retried after a transient failure may find the object its own first
    /// attempt stored, and then reports `preconditionFailed`: for content-addressed keys an
    /// existing object is the same content, so callers treat it as stored.
    @discardableResult
    public func put(_ key: String, data: Data, ifAbsent: Bool = false) async throws(S3Error) -> String {
        guard data.count <= maxObjectSize else {
            throw .refused(status: 413, code: "ObjectLargerThan\(maxObjectSize)Bytes")
        }
        let extra = ifAbsent ? [(name: "If-None-Match", value: "*")] : []
        let response = try await send("PUT", key: key, headers: extra, body: data)
        return S3XML.unquoted(response.header("ETag") ?? "")
    }

    /// The object at `key`; `notFound` when there is none.
    public func get(_ key: String) async throws(S3Error) -> Data {
        try await send("GET", key: key).body
    }

    /// The size and ETag of the object at `key`; `notFound` when there is none.
    public func head(_ key: String) async throws(S3Error) -> ObjectInfo {
        let response = try await send("HEAD", key: key)
        guard let length = response.header("Content-Length").flatMap({ Int64($0) }) else {
            throw .invalidResponse("HEAD without a Content-Length")
        }
        return ObjectInfo(size: length, etag: S3XML.unquoted(response.header("ETag") ?? ""))
    }

    /// Deletes the object at `key`. S3 answers 204 whether or not it existed.
    public func delete(_ key: String) async throws(S3Error) {
        _ = try await send("DELETE", key: key)
    }

    /// One page (at most `maxKeys`) of the keys under the location's prefix plus `prefix`, in
    /// S3's order (UTF-8 binary); keys come back relative to the location's prefix.
    public func list(
        prefix: String = "", continuationToken: String? = nil, maxKeys: Int = 1000
    ) async throws(S3Error) -> S3ListPage {
        var query = [
            (name: "list-type", value: "2"), (name: "prefix", value: location.objectKey(prefix)),
            (name: "max-keys", value: String(max(1, min(maxKeys, 1000)))),
        ]
        if let continuationToken { query.append((name: "continuation-token", value: continuationToken)) }
        let response = try await send("GET", key: nil, query: query)
        guard let xml = String(data: response.body, encoding: .utf8) else {
            throw .invalidResponse("a list that is not UTF-8")
        }
        return try S3XML.listPage(xml, prefix: location.prefix)
    }

    /// Creates the bucket (for tests and setup scripts); `refused` with `BucketAlreadyOwnedByYou`
    /// when it exists.
    public func createBucket() async throws(S3Error) {
        _ = try await send("PUT", key: nil)
    }

    /// Deletes the bucket, which must be empty (for tests: the buckets they make do not pile up).
    public func deleteBucket() async throws(S3Error) {
        _ = try await send("DELETE", key: nil)
    }

    /// Signs and sends one request, retrying transient failures; a non-2xx answer becomes its
    /// `S3Error`.
    func send(
        _ method: String, key: String?, query: [(name: String, value: String)] = [],
        headers extra: [(name: String, value: String)] = [], body: Data? = nil
    ) async throws(S3Error) -> S3HTTPResponse {
        let objectKey = key.map { location.objectKey($0) }
        var attempt = 0
        while true {
            let request = signedRequest(method, objectKey: objectKey, query: query, headers: extra, body: body)
            let error: S3Error
            let measure = StorageMetrics(backend: "s3", operation: method)
            do {
                let response = try await transport.send(request, maxBody: maxObjectSize + 4096, timeout: requestTimeout)
                measure.ended(failed: !(200..<300).contains(response.status) && response.status != 404)
                if (200..<300).contains(response.status) { return response }
                let code = String(data: response.body.prefix(65536), encoding: .utf8).flatMap(S3XML.errorCode)
                error = S3Error.classify(
                    status: response.status, code: code, key: key ?? location.bucket, method: method)
            } catch let failure {
                measure.ended(failed: true)
                error = failure
            }
            guard retryPolicy.shouldRetry(error, afterAttempt: attempt) else { throw error }
            do {
                try await sleep(retryPolicy.delay(afterAttempt: attempt, unit: random()))
            } catch {
                throw S3Error.transient("cancelled while waiting to retry")
            }
            attempt += 1
        }
    }

    /// The request with `Host`, `x-amz-date`, `x-amz-content-sha256`, the session token if any
    /// and `Authorization`; every header sent is signed.
    func signedRequest(
        _ method: String, objectKey: String?, query: [(name: String, value: String)],
        headers extra: [(name: String, value: String)], body: Data?
    ) -> S3HTTPRequest {
        let date = now()
        let path = location.path(objectKey: objectKey)
        var headers = [
            (name: "Host", value: location.host),
            (name: "x-amz-date", value: SigV4Signer.amzDate(date)),
            (name: "x-amz-content-sha256", value: SigV4Request.hash(body ?? Data())),
        ]
        if let token = credentials.sessionToken { headers.append((name: "x-amz-security-token", value: token)) }
        headers += extra
        let signable = SigV4Request(
            method: method, path: path, query: query, headers: headers, payloadHash: headers[2].value)
        headers.append(
            (name: "Authorization", value: signer.authorization(signable, credentials: credentials, date: date)))
        let queryString = SigV4Signer.canonicalQuery(query)
        let scheme = location.endpoint.scheme?.lowercased() ?? "https"
        let url =
            "\(scheme)://\(location.host)\(SigV4Signer.uriEncode(path, encodeSlash: false))"
            + (queryString.isEmpty ? "" : "?\(queryString)")
        return S3HTTPRequest(method: method, url: url, headers: headers, body: body)
    }
}

extension S3Client {
    /// A client over async-http-client for the URL `s3://BUCKET[/PREFIX]?endpoint=URL&region=R`,
    /// with credentials from `environment` (see `S3CredentialsProvider`).
    public static func make(
        url: String, environment: [String: String], transport: any S3Transport
    ) throws -> S3Client {
        let location = try S3Location(parsing: url)
        let credentials = try S3CredentialsProvider.resolve(environment: environment)
        return S3Client(location: location, credentials: credentials, transport: transport)
    }
}
