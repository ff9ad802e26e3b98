/// The batch endpoints of the protocol (doc/PROTOCOL.md "Batches"): `POST .../commits/batch`
/// carries `Container.commit(batch:)`, `POST .../commits/all-or-nothing` carries
/// `Container.commit(allOrNothing:)`, `POST .../chunks/batch` carries `Container.putChunks` (its
/// body framed by `ChunkBatchFormat`).
///
/// Versioning: a server that serves them lists `WireProtocol.Feature.commitBatch`,
/// `.commitAllOrNothing` and `.chunkBatch` in `ContainerInfo.features`; a server from before them
/// does not list them (nor the key, before any) and answers the paths `404`/`405`. A client uses
/// an endpoint only when its feature is listed; without it, it makes one call per change or chunk
/// for a batch, and refuses an all-or-nothing commit (nothing can make it atomic).
extension WireProtocol {
    /// The names of optional parts of the protocol a server lists in `ContainerInfo.features`.
    public enum Feature {
        /// `POST .../commits/batch`.
        public static let commitBatch = "commit-batch"
        /// `POST .../chunks/batch`.
        public static let chunkBatch = "chunk-batch"
        /// `POST .../commits/all-or-nothing`.
        public static let commitAllOrNothing = "commit-all-or-nothing"
        /// Everything this version of the server serves.
        public static let all = [commitBatch, chunkBatch, commitAllOrNothing]
    }

    /// The largest body of `POST .../chunks/batch`: the most payload bytes of a `putChunks` call
    /// and a frame header per chunk.
    public static let maxChunkBatchBodyBytes =
        CommitBatch.maximumChunkBytes + CommitBatch.maximumChunks * ChunkBatchFormat.frameHeaderBytes
}

extension WireProtocol.Path {
    public static func commitBatch(_ name: String) -> String { commits(name) + "/batch" }
    public static func commitAllOrNothing(_ name: String) -> String { commits(name) + "/all-or-nothing" }
    public static func chunkBatch(_ name: String) -> String { container(name) + "/chunks/batch" }
}

/// `POST /v1/containers/NAME/commits/batch` and `POST .../commits/all-or-nothing` request body:
/// at most `CommitBatch.maximumChanges` changes, each entry at most once, each as `POST
/// .../commits` takes it. (The answer to all or nothing is an `AllOrNothingOutcome`, checked by
/// the client with `AllOrNothingAnswerValidation`.)
public struct CommitBatchRequest: Codable, Equatable, Sendable {
    public var changes: [CommitRequest]
    public init(changes: [CommitRequest]) { self.changes = changes }
}

/// `POST /v1/containers/NAME/commits/batch` response body: `outcomes[i]` answers `changes[i]`
/// (refusals included: the batch as a whole was decided), checked by the client with
/// `CommitBatchAnswerValidation`.
public struct CommitBatchResponse: Codable, Equatable, Sendable {
    public var outcomes: [CommitOutcome]
    public init(outcomes: [CommitOutcome]) { self.outcomes = outcomes }
}
