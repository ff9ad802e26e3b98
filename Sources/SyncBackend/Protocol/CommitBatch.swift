/// The limits and shape checks of a batch (`Container.commit(batch:)`, `putChunks`), the same
/// for every backend and over HTTP.
public enum CommitBatch {
    /// Changes in one batch.
    public static let maximumChanges = 1_000
    /// Chunks in one `putChunks`.
    public static let maximumChunks = 1_000
    /// Encoded bytes of the chunks of one `putChunks` together: what one chunk's body may hold,
    /// so a batch costs a server no more memory or bandwidth debt than one large chunk.
    public static let maximumChunkBytes = 16 << 20
    /// Plain bytes the chunks of one `putChunks` declare together: bounds the inflating and
    /// hashing one call costs (a small zlib payload may declare 16 MiB).
    public static let maximumPlainBytes = 64 << 20

    /// The estimated JSON bytes of a batch's answer: a refusal carries a whole entry
    /// (`versionConflict`, `nameTaken`), so 1,000 small changes naming one entry with a huge
    /// manifest would answer with a thousand copies of it. A backend checks its answer
    /// (`checkAnswer`) before it commits, and refuses such a batch whole.
    public static let maximumAnswerBytes = 64 << 20

    /// Throws `invalidRequest` (the caller stores nothing) if `outcomes` would answer with more
    /// than `maximumAnswerBytes` of JSON, by a generous estimate of each carried entry.
    public static func checkAnswer(_ outcomes: [CommitOutcome]) throws(ContainerProtocolError) {
        var bytes = 0
        for outcome in outcomes {
            bytes += 64
            switch outcome {
            case .committed(let entry), .nameTaken(let entry): bytes += estimatedJSONBytes(of: entry)
            case .versionConflict(let current): bytes += current.map(estimatedJSONBytes) ?? 0
            case .chunksMissing(let hashes): bytes += 68 * hashes.count
            case .parentMissing, .directoryNotEmpty, .wouldCreateCycle: break
            }
        }
        guard bytes <= maximumAnswerBytes else {
            throw .invalidRequest(
                "the answer to this batch would hold about \(bytes) bytes (the entries its refusals name); "
                    + "at most \(maximumAnswerBytes): send fewer changes")
        }
    }

    /// An upper estimate of `entry`'s JSON: a byte array costs at most 4 characters a byte, a
    /// chunk reference about 100.
    static func estimatedJSONBytes(of entry: RemoteEntry) -> Int {
        let state = entry.state
        let xattrs = state.xattrs.reduce(0) { $0 + 4 * $1.key.utf8.count + 4 * $1.value.count + 8 }
        return 400 + entry.device.utf8.count + 4 * state.name.count + 4 * (state.symlinkTarget?.count ?? 0) + xattrs
            + 100 * state.manifest.count
    }

    /// A batch's own shape: at most `maximumChanges` changes, each file ID once (a second change
    /// of one entry in a batch is a client bug: it would have to name the first one's version).
    public static func check(_ requests: [CommitRequest]) throws(ContainerProtocolError) {
        guard requests.count <= maximumChanges else {
            throw .invalidRequest("a batch of \(requests.count) changes; at most \(maximumChanges)")
        }
        var seen = Set<FileID>()
        for (index, request) in requests.enumerated() where !seen.insert(request.id).inserted {
            throw .invalidRequest("change \(index) of the batch names entry \(request.id) a second time")
        }
    }

    /// The shape of a `putChunks` call: its count and encoded bytes.
    public static func check(_ chunks: [EncodedChunk]) throws(ContainerProtocolError) {
        guard chunks.count <= maximumChunks else {
            throw .invalidRequest("\(chunks.count) chunks in one call; at most \(maximumChunks)")
        }
        let bytes = chunks.reduce(0) { $0 + $1.payload.count }
        guard bytes <= maximumChunkBytes else {
            throw .invalidRequest("\(bytes) encoded bytes of chunks in one call; at most \(maximumChunkBytes)")
        }
        let plain = chunks.reduce(0) { $0 + $1.plainLength }
        guard plain <= maximumPlainBytes else {
            throw .invalidRequest("\(plain) plain bytes of chunks in one call; at most \(maximumPlainBytes)")
        }
        var seen = Set<ChunkHash>()
        for (index, chunk) in chunks.enumerated() where !seen.insert(chunk.hash).inserted {
            throw .invalidRequest("chunk \(index) of the call is \(chunk.hash) a second time")
        }
    }
}

extension Container {
    /// One commit after another: **not atomic** (a failure part-way leaves the changes before it
    /// committed). For test doubles and wrappers with nothing to add; every real backend and
    /// every forwarding wrapper implements the batch itself (the conformance suite checks it).
    public func commitOneByOne(_ requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try CommitBatch.check(requests)
        var outcomes: [CommitOutcome] = []
        outcomes.reserveCapacity(requests.count)
        for request in requests { outcomes.append(try await commit(request)) }
        return outcomes
    }

    /// One `putChunk` after another.
    public func putChunksOneByOne(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try CommitBatch.check(chunks)
        for chunk in chunks { try await putChunk(chunk) }
    }
}

extension Container {
    /// The default: `commitOneByOne` (see there). Backends and forwarding wrappers implement it.
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await commitOneByOne(requests)
    }

    /// The default: `putChunksOneByOne`.
    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await putChunksOneByOne(chunks)
    }
}
