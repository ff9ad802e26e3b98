import Logging
import PostgresNIO
import SyncBackend

/// Batches of a `PostgresContainer` (`Container.commit(batch:)`, `commit(allOrNothing:)`,
/// `putChunks`).
///
/// A batch of commits is one transaction under the container row's lock (`FOR UPDATE`, as
/// `PostgresCommit.lockedCommit`): each change is looked up and decided by `CommitRules` in
/// order, its lookup seeing the rows the changes before it wrote, and applied at the counter + 1.
/// A change that throws (a malformed request, a database failure) rolls the transaction back,
/// so nothing of the batch is stored and no version is used up. Each applied change queues the
/// same `NOTIFY`, which PostgreSQL delivers once, at commit. All or nothing is the same
/// transaction, rolled back when a change was refused. Each change is two round trips (its
/// lookup, its write) while the batch holds the container's lock: single commits of the same
/// container wait for the whole batch.
///
/// A batch of chunks claims every chunk in one statement (`syncfs_chunk_claim` per chunk, in the
/// order of their advisory lock keys, as a sweep takes them: no two can deadlock), puts the blobs
/// of the claimed ones through the blob store's `put(batch:)`, then marks them live in one
/// statement. The guarantees per chunk are `putChunk`'s (`PostgresChunkClaim`).
extension PostgresContainer {
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try CommitBatch.check(requests)
        for request in requests { try RequestValidation.check(request) }
        guard !requests.isEmpty else { return [] }
        // Two round trips per change: the deadline grows with the batch (one more
        // `operationTimeout` per 100 changes), still bounded for a database that stops answering.
        let timeout = store.options.operationTimeout * (1 + requests.count / 100)
        return try await store.run("commit a batch of \(requests.count) changes", timeout: timeout) {
            [rowID, store] client in
            let logger = store.options.logger
            return try await client.withTransaction(logger: logger) { connection in
                let outcomes = try await PostgresBatchCommit.commit(
                    requests, container: rowID, on: connection, logger: logger)
                // Within the transaction: an answer too large to send rolls the batch back.
                try CommitBatch.checkAnswer(outcomes)
                return outcomes
            }
        }
    }

    /// The batch's transaction, committed only if every change was: a refusal rolls it back
    /// whole (no row, no version, no `NOTIFY`).
    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try CommitBatch.check(requests)
        for request in requests { try RequestValidation.check(request) }
        guard !requests.isEmpty else { return .committed([]) }
        let timeout = store.options.operationTimeout * (1 + requests.count / 100)
        return try await store.run("commit \(requests.count) changes all or nothing", timeout: timeout) {
            [rowID, store] client in
            let logger = store.options.logger
            do {
                return try await client.withTransaction(logger: logger) { connection in
                    let answer = AllOrNothingOutcome(
                        deciding: try await PostgresBatchCommit.commit(
                            requests, container: rowID, on: connection, logger: logger))
                    try CommitBatch.checkAnswer(answer)
                    if !answer.isCommitted { throw PostgresBatchCommit.RolledBack(answer: answer) }
                    return answer
                }
            } catch let error as PostgresTransactionError {
                // Rolled back on purpose (a failed rollback leaves nothing committed either).
                if let rolledBack = error.closureError as? PostgresBatchCommit.RolledBack { return rolledBack.answer }
                throw error
            }
        }
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try CommitBatch.check(chunks)
        for chunk in chunks { try ChunkValidation.check(chunk) }
        var unique: [ChunkHash: EncodedChunk] = [:]
        for chunk in chunks { unique[chunk.hash] = chunk }
        guard !unique.isEmpty else { return }
        let ordered = unique.values.sorted {
            PostgresBatchCommit.lockKey($0.hash) < PostgresBatchCommit.lockKey($1.hash)
        }
        // In groups: each claim holds an advisory lock to the end of its statement's transaction,
        // and a thousand at once would fill the database server's shared lock table (about 64
        // per connection) for every container. Each chunk's claim stands alone; the key order
        // holds within and across groups.
        var states: [ChunkHash: Int16] = [:]
        var start = 0
        while start < ordered.count {
            let group = Array(ordered[start..<min(ordered.count, start + PostgresBatchCommit.claimGroup)])
            let claimed = try await store.run("claim \(group.count) chunks") { [rowID] client in
                try await PostgresBatchCommit.claim(group, container: rowID, client: client)
            }
            states.merge(claimed) { _, new in new }
            start += group.count
        }
        let claimed = ordered.filter { states[$0.hash] == PostgresChunkClaim.pending }
        let refused = ordered.filter {
            states[$0.hash] != PostgresChunkClaim.pending && states[$0.hash] != PostgresChunkClaim.live
        }
        if !claimed.isEmpty {
            try await store.blobs.put(batch: claimed)
            let marked = try await store.run("record \(claimed.count) chunks") { [rowID] client in
                try await PostgresBatchCommit.markLive(claimed.map(\.hash), container: rowID, client: client)
            }
            if let lost = claimed.first(where: { !marked.contains($0.hash) }) {
                throw .unavailable("chunk \(lost.hash) was collected while it was being stored; put it again")
            }
        }
        if let first = refused.first {
            throw .unavailable("chunk \(first.hash) is being deleted by a garbage collection; put it again")
        }
    }
}

enum PostgresBatchCommit {
    /// Chunks claimed by one statement (one transaction holding their advisory locks).
    static let claimGroup = 32

    /// The advisory lock key of `hash` (`syncfs_hash_key`: its first 64 bits, signed).
    static func lockKey(_ hash: ChunkHash) -> Int64 {
        Int64(bitPattern: UInt64(hash.hex.prefix(16), radix: 16) ?? 0)
    }

    /// Thrown out of an all-or-nothing transaction to roll it back; carries the refusal.
    struct RolledBack: Error {
        let answer: AllOrNothingOutcome
    }

    /// Decides and writes `requests` in order in the transaction of `connection` (the caller
    /// checks the answer's size, `CommitBatch.checkAnswer`, before the transaction ends).
    static func commit(
        _ requests: [CommitRequest], container rowID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws -> [CommitOutcome] {
        let locked = try await connection.query(
            "SELECT version FROM syncfs_containers WHERE id = \(rowID) FOR UPDATE", logger: logger)
        var counter: Int64?
        for try await version in locked.decode(Int64.self) { counter = version }
        guard var counter else {
            throw ContainerProtocolError.unavailable("the container is no longer in the database")
        }
        var outcomes: [CommitOutcome] = []
        outcomes.reserveCapacity(requests.count)
        for request in requests {
            let key = CommitLookupKey(request, container: rowID)
            let rows = try await connection.query(key.lookup, logger: logger)
            let snapshot = try await CommitSnapshot.read(rows, for: key) { _ in }
            switch try CommitRules.decide(request, in: snapshot) {
            case .refuse(let outcome):
                outcomes.append(outcome)
            case .apply(let isDeleted, let state):
                counter += 1
                let entry = RemoteEntry(
                    id: request.id, version: EntryVersion(counter), isDeleted: isDeleted, device: request.device,
                    state: state)
                // Drain the answer: the statement has run once its one row has come back.
                for try await _ in try await connection.query(
                    PostgresEntryRow.apply(entry, container: rowID), logger: logger)
                {}
                outcomes.append(.committed(entry))
            }
        }
        return outcomes
    }

    /// Claims `chunks` (in the order given) for container `rowID` in one statement; answers each
    /// hash's claim state (`PostgresChunkClaim`).
    static func claim(_ chunks: [EncodedChunk], container rowID: Int64, client: PostgresClient) async throws
        -> [ChunkHash: Int16]
    {
        let rows = try await client.query(
            """
            SELECT c.hash, syncfs_chunk_claim(\(rowID), c.hash, c.plain, c.encoding, c.length,
                \(PostgresChunkClaim.takeover.wholeNanoseconds))
            FROM unnest(\(chunks.map(\.hash.hex)), \(chunks.map { Int64($0.plainLength) }),
                \(chunks.map { Int16($0.encoding.rawValue) }), \(chunks.map { Int64($0.payload.count) }))
                WITH ORDINALITY AS c (hash, plain, encoding, length, position)
            ORDER BY c.position
            """)
        var states: [ChunkHash: Int16] = [:]
        for try await (hex, state) in rows.decode((String, Int16).self) {
            if let hash = ChunkHash(hex: hex) { states[hash] = state }
        }
        return states
    }

    /// Marks the pending or live rows of `hashes` live; answers the hashes marked.
    static func markLive(_ hashes: [ChunkHash], container rowID: Int64, client: PostgresClient) async throws
        -> Set<ChunkHash>
    {
        let rows = try await client.query(
            """
            UPDATE syncfs_chunks SET state = \(PostgresChunkClaim.live)
            WHERE container = \(rowID) AND hash = ANY(\(hashes.map(\.hex)))
                AND state IN (\(PostgresChunkClaim.pending), \(PostgresChunkClaim.live))
            RETURNING hash
            """)
        var marked = Set<ChunkHash>()
        for try await hex in rows.decode(String.self) {
            if let hash = ChunkHash(hex: hex) { marked.insert(hash) }
        }
        return marked
    }
}
