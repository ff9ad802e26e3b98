/// Why a container call failed. Every case says whether trying again later can help.
///
/// A transient failure is never an answer about the data: "unavailable" does not mean "deleted".
public enum ContainerProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The container cannot be reached or is busy (network down, server restarting, lock
    /// timeout). Retry with backoff.
    case unavailable(String)
    /// The container answered, but refused the call for now because it is overloaded (HTTP
    /// `503`/`429`): retry, but only after a backoff of the call's own — another call's success
    /// says nothing about when this one may go again (unlike `unavailable`, whose retries may
    /// go as soon as the container answers anything).
    case busy(String)
    /// The container's storage failed (disk full, I/O error). Retry with backoff.
    case storageFailure(String)
    /// The container's server answered, but the storage behind it (its database, chunk store or
    /// disk) cannot be reached now (`503 storageUnavailable`): the server is there, the data is
    /// not reachable through it. Retry with backoff.
    case storageUnavailable(String)
    /// No chunk with this hash is stored.
    case chunkNotFound(ChunkHash)
    /// The stored chunk does not decode to bytes with its hash (detected by the reader).
    case corruptChunk(ChunkHash)
    /// The request is malformed (a client bug or bad input). Retrying the same request cannot help.
    case invalidRequest(String)

    public var isRetryable: Bool {
        switch self {
        case .unavailable, .busy, .storageFailure, .storageUnavailable: return true
        case .chunkNotFound, .corruptChunk, .invalidRequest: return false
        }
    }

    public var description: String {
        switch self {
        case .unavailable(let reason): return "container unavailable: \(reason)"
        case .busy(let reason): return "container busy: \(reason)"
        case .storageFailure(let reason): return "container storage failure: \(reason)"
        case .storageUnavailable(let reason): return "server storage unavailable: \(reason)"
        case .chunkNotFound(let hash): return "chunk \(hash) not found"
        case .corruptChunk(let hash): return "chunk \(hash) is corrupt"
        case .invalidRequest(let reason): return "invalid request: \(reason)"
        }
    }
}
