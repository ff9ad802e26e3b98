import NIOCore

/// What one client may take of the server, so that no token holder (or anyone without a token)
/// can starve the others (doc/PROTOCOL.md, "Fairness and deadlines"). Every limit answers at
/// once, never queues: a refused request stores nothing and says when to come back.
///
/// - **Request bodies** (`BodyBudget`): before a body is read, its declared length (or, without
///   `Content-Length`, the endpoint's largest body) is reserved from three byte budgets: the
///   request's token's, its container's and the server's. Chunk uploads also take one of a
///   limited number of upload slots at each level. A token or container at its limit is answered
///   `429 tooManyRequests`, the server at its limit `503 unavailable`; both with `Retry-After`.
/// - **Decoding JSON** (`MemoryBudget`): once a JSON body has arrived, decoding it, applying it and
///   encoding the answer is estimated at `decodingFactor` times its length (measured: a 23 MB
///   commit peaks at ~11×) and reserved from `decodingMemory` (a body may always use the whole
///   budget alone); beyond it `503` with `Retry-After`. Reserved only after the body arrived, so
///   a slow client never holds it.
/// - **Deadlines** (`ConnectionGuard`): a request body must bring at least `progressBytes` in
///   every `progressWindow` (or all that is left of it), and the whole request must arrive
///   within `requestDeadline` of its head; else `408 requestTimeout` and the connection is closed.
/// - **Connections** (`ConnectionGuard`): at most `connectionsPerAddress` from one client
///   address (beyond: closed at once), at most `unauthenticatedConnections` that have not made a
///   request with a valid token (beyond: the oldest idle one is closed), and such a connection is
///   closed after `unauthenticatedIdle` without a request. The descriptor limit is raised to its
///   hard limit at start (`DescriptorLimit`).
public struct ServerLimits: Sendable, Equatable {
    /// One level of a budget: how many uploads at once and how many body bytes in flight.
    public struct Share: Sendable, Equatable {
        public var uploads: Int
        public var bytes: Int
        public init(uploads: Int, bytes: Int) {
            self.uploads = uploads
            self.bytes = bytes
        }
    }

    public var server: Share
    public var perContainer: Share
    public var perToken: Share

    /// Estimated memory for decoding JSON bodies at once, and the estimate per body byte.
    public var decodingMemory: Int
    public var decodingFactor: Int

    public var progressWindow: Duration
    public var progressBytes: Int
    public var requestDeadline: Duration

    public var connectionsPerAddress: Int
    public var unauthenticatedConnections: Int
    public var unauthenticatedIdle: Duration

    /// `uploads` chunk uploads at once on the whole server (each may hold up to ~32 MiB); the
    /// other limits are the defaults documented in doc/PROTOCOL.md.
    public static func standard(uploads: Int = SyncServer.defaultChunkUploads) -> ServerLimits {
        let uploads = max(1, uploads)
        return ServerLimits(
            server: Share(uploads: uploads, bytes: 256 << 20),
            perContainer: Share(uploads: max(1, uploads / 2), bytes: 128 << 20),
            perToken: Share(uploads: max(1, uploads / 4), bytes: 64 << 20),
            decodingMemory: 384 << 20, decodingFactor: 12,
            progressWindow: .seconds(10), progressBytes: 32 << 10, requestDeadline: .seconds(300),
            connectionsPerAddress: 128, unauthenticatedConnections: 128, unauthenticatedIdle: .seconds(10))
    }

    /// `Retry-After` of a refusal for lack of room (seconds).
    static let retryAfterSeconds = 1
}

extension Duration {
    /// The same span as a NIO `TimeAmount`.
    var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
