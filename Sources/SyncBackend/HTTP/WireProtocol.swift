/// The container protocol over HTTP (version 1): the names, limits and small payloads the server
/// (`SyncServer`) and the client (`SyncClient.HTTPContainer`) share. doc/PROTOCOL.md describes
/// every endpoint; `Tests/SyncServerTests/ProtocolDocumentTests.swift` keeps it true.
///
/// Everything here is plain data (Foundation only), so both sides agree by construction.
public enum WireProtocol {
    /// The path prefix of every endpoint but the health check.
    public static let prefix = "/v1"

    /// `Authorization: Bearer <token>` on every request but `GET /v1/health`.
    public static let authorizationScheme = "Bearer"

    /// A chunk's payload encoding on `PUT`/`GET .../chunks/HASH`: `raw`, `zlib` or `sealed`.
    public static let chunkEncodingHeader = "SyncFS-Chunk-Encoding"
    /// A chunk's plain (decoded) length in bytes, decimal.
    public static let plainLengthHeader = "SyncFS-Plain-Length"
    /// Optional on every container request: the container ID the client synced with so far. A
    /// container with another ID under the name (replaced, restored from another backup) answers
    /// `412 containerMismatch` instead of serving the request.
    public static let containerIDHeader = "SyncFS-Container-ID"

    /// The largest plain chunk the server stores (the client's chunker cuts at 4 MiB).
    public static let maxChunkPlainLength = 16 << 20
    /// The largest chunk payload (request body) the server reads: a payload never needs more
    /// than its plain length (the client stores a chunk raw when zlib does not make it smaller).
    public static let maxChunkBodyBytes = maxChunkPlainLength
    /// The largest JSON request body: a commit of a file of ~350,000 chunks (~350 GiB at the
    /// 1 MiB average chunk size) fits.
    public static let maxJSONBodyBytes = 32 << 20
    /// The most hashes one missing-chunks request may ask about.
    public static let maxMissingCheckHashes = 10_000
    /// The longest `timeout` a change wait may ask for; a larger one is `400 invalidRequest`.
    public static let maxWaitMilliseconds = 30_000
    /// The wait of `changes/wait` when the request names no `timeout`.
    public static let defaultWaitMilliseconds = 25_000
    /// The most entries one `changes` page may ask for (`limit`).
    public static let maxChangesLimit = 10_000
    /// The page size of `changes` when the request names no `limit`.
    public static let defaultChangesLimit = 1_000
    /// The most JSON bytes the server puts in one `changes` page: a page that would be larger
    /// holds fewer entries than `limit` (`moreComing` says more exist); a single entry is always
    /// sent, however large.
    public static let maxChangePageBytes = 16 << 20
    /// The page size of `entries/ID/versions` and `trash` when the request names no `limit`
    /// (at most `HistoryPage.limits`' upper bound).
    public static let defaultHistoryLimit = 100
    /// The most JSON bytes the server puts in one history or trash page: a page that would be
    /// larger holds fewer versions than `limit` (`moreComing` says so); one version is always
    /// sent, however large.
    public static let maxHistoryPageBytes = 16 << 20
    /// The largest body of a lock request (`LockRequest`, `LockRelease`, `LockRenewal`,
    /// `LockSessionRelease`: a few hundred bytes of JSON).
    public static let maxLockBodyBytes = 4_096
    /// `POST /v1/login`'s body: names, a password, codes.
    public static let maxLoginBodyBytes = 8_192
    /// The largest file one upload through a share link brings (`POST /v1/links/SECRET/upload`);
    /// it must also arrive within the server's request deadline.
    public static let maxLinkUploadBytes = 4 << 30
    /// A commit's `device`: 1...128 bytes of UTF-8 without control characters.
    public static let maxDeviceBytes = 128
    /// An extended attribute's name: `user.` and at least one more byte, at most 255 bytes, no NUL.
    public static let maxXattrNameBytes = 255
    /// An extended attribute's value (Linux's `XATTR_SIZE_MAX`).
    public static let maxXattrValueBytes = 65_536
    /// All extended attributes of one entry together (names and values).
    public static let maxXattrTotalBytes = 1 << 20

    /// Query parameters: the cursor (`changes`, `changes/wait`), the page size (`changes`,
    /// `entries/ID/versions`, `trash`), the wait in milliseconds (`changes/wait`) and the version
    /// a trash page starts below (`trash`). Any other parameter is `400 invalidRequest`.
    public enum Query {
        public static let after = "after"
        public static let limit = "limit"
        public static let timeout = "timeout"
        public static let before = "before"
        public static let since = "since"
        public static let path = "path"
        public static let name = "name"
    }

    /// The wire names of `ChunkEncoding`.
    public static func encodingName(_ encoding: ChunkEncoding) -> String {
        switch encoding {
        case .raw: return "raw"
        case .zlib: return "zlib"
        case .sealed: return "sealed"
        }
    }

    /// The `ChunkEncoding` of a wire name, or nil.
    public static func encoding(named name: String) -> ChunkEncoding? {
        switch name {
        case "raw": return .raw
        case "zlib": return .zlib
        case "sealed": return .sealed
        default: return nil
        }
    }

    /// Paths relative to a container's base (`/v1/containers/NAME`).
    public enum Path {
        public static let login = "\(prefix)/login"
        public static func container(_ name: String) -> String { "\(prefix)/containers/\(name)" }
        public static func missingChunks(_ name: String) -> String { container(name) + "/chunks/missing" }
        public static func chunk(_ name: String, _ hash: ChunkHash) -> String {
            container(name) + "/chunks/\(hash.hex)"
        }
        public static func entry(_ name: String, _ id: FileID) -> String { container(name) + "/entries/\(id.hex)" }
        public static func commits(_ name: String) -> String { container(name) + "/commits" }
        public static func changes(_ name: String) -> String { container(name) + "/changes" }
        public static func wait(_ name: String) -> String { container(name) + "/changes/wait" }
        public static func versions(_ name: String, _ id: FileID) -> String { entry(name, id) + "/versions" }
        public static func trash(_ name: String) -> String { container(name) + "/trash" }
        public static func digest(_ name: String) -> String { container(name) + "/digest" }
        public static func locks(_ name: String) -> String { container(name) + "/locks" }
        public static func unlock(_ name: String) -> String { locks(name) + "/unlock" }
        public static func renewLocks(_ name: String) -> String { locks(name) + "/renew" }
        public static func releaseLocks(_ name: String) -> String { locks(name) + "/release" }
        public static func entryLocks(_ name: String, _ id: FileID) -> String { entry(name, id) + "/locks" }
        public static let health = "\(prefix)/health"
    }
}

/// The body of every error response: a machine-readable code and a message for people.
public struct WireError: Codable, Equatable, Sendable {
    /// One of `Code`'s raw values (clients must treat unknown codes by their HTTP status).
    public var error: String
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.error = code.rawValue
        self.message = message
    }

    /// Every error code, with the HTTP status it is sent with.
    public enum Code: String, Sendable, CaseIterable {
        /// 400: the request is malformed (bad JSON, name, ID, cursor, parameter, header).
        case invalidRequest
        /// 401: no token, or a token that is unknown or revoked.
        case unauthorized
        /// 403: a valid token for another container.
        case forbidden
        /// 404: no such container (for a token that names it) or endpoint.
        case notFound
        /// 404: no chunk with this hash.
        case chunkNotFound
        /// 404: no entry with this ID has ever existed.
        case entryNotFound
        /// 405: the endpoint exists, the method does not.
        case methodNotAllowed
        /// 408: the request did not arrive in time (its head, or its body too slowly); the server
        /// closes the connection after this answer.
        case requestTimeout
        /// 413: the body (or a batch) is larger than the limits in `WireProtocol`.
        case tooLarge
        /// 422: the chunk's bytes do not decode to its plain length or do not hash to its hash.
        case chunkMismatch
        /// 412: the container under this name is not the one `SyncFS-Container-ID` names.
        case containerMismatch
        /// 429: this token, or this container, has as many requests of the kind in progress as the
        /// server allows one (`Retry-After` says when to try again); others are still served.
        case tooManyRequests
        /// 501: the container does not offer this call (e.g. it keeps no version history).
        case notImplemented
        /// 503: the container cannot be used right now (the server is stopping), or the whole
        /// server is too busy (with `Retry-After`).
        case unavailable
        /// 503: the server is up, but the storage behind the container (its database, chunk
        /// store or disk) cannot be reached (with `Retry-After`). Retry later; nothing is lost.
        case storageUnavailable
        /// 507: the server's storage failed (disk full, I/O error).
        case storageFailure
        /// 507: storing this chunk would take the container over its quota (`serve --quota`);
        /// retryable later (files deleted, garbage collected, the quota raised).
        case quotaExceeded

        public var status: Int {
            switch self {
            case .invalidRequest: return 400
            case .unauthorized: return 401
            case .forbidden: return 403
            case .notFound, .chunkNotFound, .entryNotFound: return 404
            case .methodNotAllowed: return 405
            case .requestTimeout: return 408
            case .tooLarge: return 413
            case .chunkMismatch: return 422
            case .containerMismatch: return 412
            case .tooManyRequests: return 429
            case .notImplemented: return 501
            case .unavailable, .storageUnavailable: return 503
            case .storageFailure, .quotaExceeded: return 507
            }
        }
    }
}

/// `GET /v1/health` response body: `{"status":"ok"}`.
public struct HealthStatus: Codable, Equatable, Sendable {
    public var status: String
    public init(status: String) { self.status = status }
}

/// `GET /v1/containers/NAME`: which container this is.
public struct ContainerInfo: Codable, Equatable, Sendable {
    /// The container's stable ID (`Container.containerID`).
    public var id: String
    public var name: String
    /// The optional parts of the protocol the server serves (`WireProtocol.Feature`); nil (the
    /// key absent) from a server older than them. Unknown names are ignored.
    public var features: [String]?
    /// What the request's token may do in this container (`AccessRole`); nil (the key absent)
    /// from a server older than roles, whose every token is an editor's. An unknown value fails
    /// decoding: a client must not guess at rights it does not know.
    public var access: AccessRole?
    public init(id: String, name: String, features: [String]? = nil, access: AccessRole? = nil) {
        self.id = id
        self.name = name
        self.features = features
        self.access = access
    }
}

/// `POST /v1/containers/NAME/chunks/missing` request body.
public struct MissingChunksRequest: Codable, Equatable, Sendable {
    public var hashes: [ChunkHash]
    public init(hashes: [ChunkHash]) { self.hashes = hashes }
}

/// `POST /v1/containers/NAME/chunks/missing` response body.
public struct MissingChunksResponse: Codable, Equatable, Sendable {
    public var missing: [ChunkHash]
    public init(missing: [ChunkHash]) { self.missing = missing }
}

/// `GET /v1/containers/NAME/changes/wait` response body.
public struct WaitResponse: Codable, Equatable, Sendable {
    public var changed: Bool
    public init(changed: Bool) { self.changed = changed }
}

/// `GET /v1/containers/NAME/entries/ID/versions` and `GET /v1/containers/NAME/trash` response
/// body: versions newest first (`ContainerHistory`), checked by the client with
/// `HistoryAnswerValidation`.
public struct HistoryResponse: Codable, Equatable, Sendable {
    public var versions: [HistoricVersion]
    /// The page holds fewer versions than asked because of `WireProtocol.maxHistoryPageBytes`,
    /// and more exist (for the trash: ask again with `before` the last one's version).
    public var moreComing: Bool
    public init(versions: [HistoricVersion], moreComing: Bool) {
        self.versions = versions
        self.moreComing = moreComing
    }
}

/// Container names on a server: 1...64 bytes of `A-Z a-z 0-9 . _ -`, not starting with `.`
/// (so never `.`, `..`, a hidden file, or anything with `/` or NUL).
public enum ContainerName {
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
