import Crypto
import Dispatch
import Foundation
import SyncBackend

/// Chunk bytes in an S3-compatible bucket: the object at `PREFIX/chunks/HH/<64 hex>` (`HH`
/// the hash's first two hex digits) holds the chunk exactly as a local chunk file does
/// (`LocalChunkFile`: a 16-byte header, then the encoded payload). See doc/FORMATS.md, "Chunks in
/// an object store".
///
/// Contracts (those of `ChunkBlobStore`, on S3):
/// - `put` is one PUT with `If-None-Match: *`: S3 makes a single PUT visible whole or not at all,
///   so no reader sees a partial chunk. An object already at the key answers 412 and is not
///   rewritten; its size and ETag (the MD5 of a single-part upload) are then checked with a HEAD,
///   and only an object that differs (damaged, or written by something else) is replaced by an
///   unconditional PUT of the same bytes. A store
///   that ignores `If-None-Match` rewrites identical bytes (harmless); one that refuses it with
///   `NotImplemented` gets a HEAD, then a plain PUT if the object is absent or of another size.
/// - No multipart upload: an object is at most `maxObjectBytes` (16 MiB of payload, the largest
///   chunk the server accepts, `WireProtocol.maxChunkPlainLength`, plus the header; the client's
///   chunker cuts at 4 MiB), far under S3's 5 GiB single-PUT limit.
/// - `get` trusts nothing in the bucket: the body must have our header and decode (zlib or raw)
///   to exactly the declared length of bytes whose SHA-256 is the requested hash (checked on a
///   Dispatch thread, off the cooperative pool); anything else is `corruptChunk`, never served. 404 `NoSuchKey` is `chunkNotFound`.
/// - `delete` is idempotent (S3 answers 204 whether or not the object existed).
/// - Transient failures (no connection, timeouts, 5xx, 429, `SlowDown`, a proxy's page) are
///   retried by the client, then are `unavailable`, never `chunkNotFound`. A refusal (403 for a
///   wrong key, a missing bucket) is `storageFailure` naming S3's error code: it is not retried
///   here, and an operator fixing the configuration makes a later try succeed. No error text
///   carries a credential (`S3Error` has none to carry).
public struct S3ChunkBlobStore: ChunkBlobStore {
    public let client: S3Client

    /// The largest object this store writes or reads: the largest chunk payload plus the header.
    public static let maxObjectBytes = WireProtocol.maxChunkPlainLength + LocalChunkFile.headerSize

    /// A store on `client`'s bucket and prefix. The client's `maxObjectSize` must admit
    /// `maxObjectBytes` (build it with `S3ChunkBlobStore.client(…)` or pass that size).
    public init(client: S3Client) {
        precondition(client.maxObjectSize >= Self.maxObjectBytes, "the S3 client must admit a whole chunk object")
        self.client = client
    }

    /// A client fit for chunks: objects up to `maxObjectBytes`, the given retries and deadline.
    public static func client(
        location: S3Location, credentials: S3Credentials, transport: any S3Transport,
        retryPolicy: S3RetryPolicy = S3RetryPolicy(), requestTimeout: Duration = .seconds(30)
    ) -> S3Client {
        S3Client(
            location: location, credentials: credentials, transport: transport, retryPolicy: retryPolicy,
            maxObjectSize: maxObjectBytes, requestTimeout: requestTimeout)
    }

    /// A store for the chunk-store URL `s3://BUCKET[/PREFIX]?endpoint=URL&region=R[&style=…]`
    /// (`S3Location`), with credentials from `environment` (`S3CredentialsProvider`: the AWS
    /// variables or a credentials file, never the URL). Errors name what is wrong, never a secret.
    /// Give it a transport over `AsyncHTTPClientTransport.makeHTTPClient()` so that a dead
    /// endpoint is `unavailable` within seconds.
    public static func make(
        url: String, environment: [String: String], transport: any S3Transport,
        retryPolicy: S3RetryPolicy = S3RetryPolicy()
    ) throws -> S3ChunkBlobStore {
        let location = try S3Location(parsing: url)
        let credentials = try S3CredentialsProvider.resolve(environment: environment)
        return S3ChunkBlobStore(
            client: client(location: location, credentials: credentials, transport: transport, retryPolicy: retryPolicy)
        )
    }

    /// The key of a chunk, relative to the location's prefix: `chunks/HH/<64 hex>`.
    public static func key(_ hash: ChunkHash) -> String {
        let hex = hash.hex
        return "chunks/\(hex.prefix(2))/\(hex)"
    }

    public func put(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        guard chunk.plainLength >= 0, chunk.plainLength <= WireProtocol.maxChunkPlainLength,
            chunk.payload.count <= WireProtocol.maxChunkPlainLength
        else {
            throw .invalidRequest("chunk \(chunk.hash) is larger than \(WireProtocol.maxChunkPlainLength) bytes")
        }
        let key = Self.key(chunk.hash)
        let body = Data(LocalChunkFile.encode(chunk))
        let written = try await attempt("store", chunk.hash) { () async throws(S3Error) -> Bool in
            do throws(S3Error) {
                try await client.put(key, data: body, ifAbsent: true)
                return true
            } catch .preconditionFailed {
                return false
            } catch .refused(let status, "NotImplemented") where status == 501 || status == 400 {
                return false  // a store without conditional writes: check, then write plainly
            }
        }
        if written { return }
        // Already there (perhaps from this very PUT's first attempt, retried): kept unless its
        // size or MD5 shows it is not this chunk's encoding (damaged, or written by something else).
        // Absent (a store without conditional writes): written with a plain PUT.
        let stored = try await attempt("check", chunk.hash) { () async throws(S3Error) -> S3Client.ObjectInfo? in
            do throws(S3Error) { return try await client.head(key) } catch .notFound { return nil }
        }
        if let stored, Self.matches(stored, body) { return }
        try await attempt("store", chunk.hash) { () async throws(S3Error) in try await client.put(key, data: body) }
    }

    public func get(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        // A body larger than any chunk object is cut off by the transport (`invalidResponse`):
        // stored bytes that cannot be this chunk, so corrupt.
        let fetched = try await attempt("read", hash) { () async throws(S3Error) -> Data? in
            do throws(S3Error) { return try await client.get(Self.key(hash)) } catch .invalidResponse { return nil }
        }
        guard let body = fetched, body.count <= Self.maxObjectBytes else { throw .corruptChunk(hash) }
        return try await Self.offload { () throws(ContainerProtocolError) -> EncodedChunk in
            guard let chunk = LocalChunkFile.decode(Array(body), hash: hash) else { throw .corruptChunk(hash) }
            try ChunkCodec.verifyShape(chunk)  // length and SHA-256 (a sealed chunk: length), or corruptChunk

            return chunk
        }
    }

    /// Runs CPU-heavy work (zlib and SHA-256 of up to 16 MiB) on a Dispatch thread, keeping the
    /// few threads of Swift's cooperative pool free for requests.
    private static func offload<T: Sendable>(
        _ work: @escaping @Sendable () throws(ContainerProtocolError) -> T
    ) async throws(ContainerProtocolError) -> T {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<T, ContainerProtocolError>, Never>) in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(ContainerProtocolError) -> T in try work() })
            }
        }
        return try result.get()
    }

    public func delete(_ hash: ChunkHash) async throws(ContainerProtocolError) {
        try await attempt("delete", hash) { () async throws(S3Error) in
            do throws(S3Error) { try await client.delete(Self.key(hash)) } catch .notFound {}
        }
    }

    /// Whether the object described by `info` holds `body`: the same size and, when the ETag is a
    /// plain MD5 (a single-part upload without KMS or customer-key encryption, which SyncFS never
    /// asks for), the same MD5. Another ETag form (multipart `…-N`, a store's own scheme) is
    /// judged by size alone.
    static func matches(_ info: S3Client.ObjectInfo, _ body: Data) -> Bool {
        guard info.size == Int64(body.count) else { return false }
        let etag = info.etag.lowercased()
        guard etag.utf8.count == 32, etag.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return true }
        return etag == Insecure.MD5.hash(data: body).map { String(format: "%02x", $0) }.joined()
    }

    /// `body`'s result, or its S3 failure as the container error of doing `action` on `hash`.
    @discardableResult
    private func attempt<T>(
        _ action: String, _ hash: ChunkHash, _ body: () async throws(S3Error) -> T
    ) async throws(ContainerProtocolError) -> T {
        do throws(S3Error) { return try await body() } catch { throw Self.failure(error, hash, action) }
    }

    /// The container error of an S3 failure on chunk `hash` while doing `action`.
    static func failure(_ error: S3Error, _ hash: ChunkHash, _ action: String) -> ContainerProtocolError {
        switch error {
        case .notFound: return .chunkNotFound(hash)
        case .transient(let reason): return .unavailable("cannot \(action) chunk \(hash) in S3: \(reason)")
        case .refused(let status, let code):
            let hint = status == 403 ? " (check the S3 credentials and the bucket's permissions)" : ""
            return .storageFailure(
                "S3 refused to \(action) chunk \(hash): HTTP \(status)\(code.map { " \($0)" } ?? "")\(hint)")
        case .preconditionFailed, .invalidResponse:
            return .storageFailure("cannot \(action) chunk \(hash) in S3: \(error)")
        }
    }
}
