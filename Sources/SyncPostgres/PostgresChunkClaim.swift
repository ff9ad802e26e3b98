import PostgresNIO
import SyncBackend

/// The chunks of a `PostgresContainer`: its rows of `syncfs_chunks` say which chunks it holds;
/// the bytes are in the store's `ChunkBlobStore`, shared by every container of the store (one
/// blob per hash). Only live rows (state 1: the blob was stored after the row was claimed)
/// count: for `missingChunks`, `chunk(_:)` and a commit's lookup.
///
/// `putChunk` claims before it stores (doc/SEMANTICS.md "Garbage collection", PostgreSQL):
/// 1. `syncfs_chunk_claim`, one transaction under the hash's advisory lock: refused
///    (`unavailable`, retryable) while a sweep is deleting that blob (`PostgresSweep`), else the
///    row is upserted — new: pending; existing: `stored_at` touched, a live row stays live, any
///    other becomes pending again.
/// 2. A row that was already live needs no blob put (the blob is there: a sweep deletes a blob
///    only when no container holds a row in another state than "being deleted").
/// 3. Otherwise the blob is put, then the row marked live — only if it is still pending (or
///    live already: a concurrent put of the same chunk got there first; a live row always has
///    its blob): a collection that chose it meanwhile (grace 0, or an abandoned claim) wins, and
///    the put is answered `unavailable` so the client puts it again.
/// So a live row always has its blob, and a chunk a `putChunk` acknowledged is kept for the
/// collection's grace period from that acknowledgement.
enum PostgresChunkClaim {
    /// How old a sweep record must be before a `putChunk` or a collection takes it over (the
    /// sweep that wrote it is taken to have died: its blob deletion ended long ago).
    static let takeover: Duration = .seconds(600)

    /// The row states of `syncfs_chunks`.
    static let pending: Int16 = 0
    static let live: Int16 = 1
    static let beingDeleted: Int16 = 2
}

extension PostgresContainer {
    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        guard !hashes.isEmpty else { return [] }
        let held = try await store.run("look up chunks") { [rowID] client in
            try await Self.heldChunks(hashes, container: rowID) { query in try await client.query(query) }
        }
        return hashes.filter { !held.contains($0) }
    }

    /// Which of `hashes` container `rowID` holds live, through `query`.
    static func heldChunks(
        _ hashes: [ChunkHash], container rowID: Int64,
        query: (PostgresQuery) async throws -> PostgresRowSequence
    ) async throws -> Set<ChunkHash> {
        let rows = try await query(
            """
            SELECT hash FROM syncfs_chunks
            WHERE container = \(rowID) AND hash = ANY(\(hashes.map(\.hex))) AND state = \(PostgresChunkClaim.live)
            """)
        var held = Set<ChunkHash>()
        for try await hex in rows.decode(String.self) {
            if let hash = ChunkHash(hex: hex) { held.insert(hash) }
        }
        return held
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try ChunkValidation.check(chunk)
        let hash = chunk.hash
        let state = try await store.run("claim chunk \(hash)") { [rowID] client in
            let rows = try await client.query(
                """
                SELECT syncfs_chunk_claim(\(rowID), \(hash.hex), \(Int64(chunk.plainLength)),
                    \(Int16(chunk.encoding.rawValue)), \(Int64(chunk.payload.count)),
                    \(PostgresChunkClaim.takeover.wholeNanoseconds))
                """)
            for try await state in rows.decode(Int16.self) { return state }
            throw ContainerProtocolError.storageFailure("the chunk claim answered nothing")
        }
        switch state {
        case PostgresChunkClaim.live: return
        case PostgresChunkClaim.pending: break
        default: throw .unavailable("chunk \(hash) is being deleted by a garbage collection; put it again")
        }
        try await store.blobs.put(chunk)
        let marked = try await store.run("record chunk \(hash)") { [rowID] client in
            let rows = try await client.query(
                """
                UPDATE syncfs_chunks SET state = \(PostgresChunkClaim.live)
                WHERE container = \(rowID) AND hash = \(hash.hex)
                    AND state IN (\(PostgresChunkClaim.pending), \(PostgresChunkClaim.live))
                RETURNING state
                """)
            for try await _ in rows.decode(Int16.self) { return true }
            return false
        }
        guard marked else {
            throw .unavailable("chunk \(hash) was collected while it was being stored; put it again")
        }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        let held = try await store.run("look up chunk \(hash)") { [rowID] client in
            try await Self.heldChunks([hash], container: rowID) { query in try await client.query(query) }
        }
        guard held.contains(hash) else { throw .chunkNotFound(hash) }
        do {
            return try await store.blobs.get(hash)
        } catch .chunkNotFound {
            throw .storageFailure("chunk \(hash) is recorded but its bytes are not in the chunk store")
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating at `Int64.max` (a negative one is 0).
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        guard seconds < Int64.max / 1_000_000_000 - 1 else { return .max }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
