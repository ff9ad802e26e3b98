import Logging
import PostgresNIO
import SyncBackend

/// The store-wide half of a `PostgresContainer` collection: deleting the blobs of hashes whose
/// last row went (doc/SEMANTICS.md "Garbage collection", PostgreSQL). The blob store is shared
/// by every container of the store while rows are per container, so a blob goes only when no
/// container holds a row of its hash in another state than "being deleted".
///
/// For each batch of hashes:
/// 1. One transaction takes the hashes' advisory locks (in key order: two sweeps never
///    deadlock; `putChunk`'s claim takes the same lock), finds the hashes no container holds
///    otherwise, records them in `syncfs_sweeps`, deletes every "being deleted" row of the batch,
///    and commits. From then on a `putChunk` of a recorded hash is refused `unavailable`.
/// 2. The blobs of the recorded hashes are deleted (`ChunkBlobStore.delete`, idempotent).
/// 3. The records of the deleted blobs are removed (only if still this sweep's: `sweeper`, a
///    random number per batch); `putChunk` of them works again (and stores the blob anew).
/// A failure leaves the records of the blobs not known deleted: the next collection sweeps them
/// again once they are `PostgresChunkClaim.takeover` old (as a `putChunk` then takes them
/// over), and the error is thrown — nothing is deleted because of a transient failure, a
/// record only delays a `putChunk`.
enum PostgresSweep {
    static let batchSize = 1000
    static let parallelDeletes = 16

    /// Sweeps `hashes`; answers how many blobs were deleted.
    static func sweep(_ hashes: [ChunkHash], store: PostgresStore) async throws(ContainerProtocolError) -> Int {
        var deleted = 0
        var start = 0
        while start < hashes.count {
            let batch = Array(hashes[start..<min(start + batchSize, hashes.count)])
            start += batchSize
            let sweeper = Int64.random(in: .min ... .max)
            let doomed = try await store.run("record chunks to sweep") { client in
                try await record(batch.map(\.hex), sweeper: sweeper, client: client, logger: store.options.logger)
            }
            let gone = await deleteBlobs(doomed, store: store)
            if !gone.succeeded.isEmpty {
                let removed = gone.succeeded.map(\.hex)
                // Only this sweep's records: another one may have taken a record over meanwhile.
                try await store.run("finish a sweep") { client in
                    _ = try await client.query(
                        "DELETE FROM syncfs_sweeps WHERE hash = ANY(\(removed)) AND sweeper = \(sweeper)")
                }
            }
            deleted += gone.succeeded.count
            if let failure = gone.failure { throw failure }
        }
        return deleted
    }

    /// Step 1 for `hexes`: the hashes whose blob may now be deleted (recorded).
    private static func record(
        _ hexes: [String], sweeper: Int64, client: PostgresClient, logger: Logger
    ) async throws -> [ChunkHash] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                SELECT count(pg_advisory_xact_lock(k)) FROM (
                    SELECT DISTINCT syncfs_hash_key(h) AS k FROM unnest(\(hexes)::text[]) AS h ORDER BY k) AS keys
                """, logger: logger)
            let rows = try await connection.query(
                """
                WITH doomed AS (
                    SELECT DISTINCT h FROM unnest(\(hexes)::text[]) AS h
                    WHERE NOT EXISTS (SELECT 1 FROM syncfs_chunks c
                        WHERE c.hash = h AND c.state <> \(PostgresChunkClaim.beingDeleted))),
                recorded AS (
                    INSERT INTO syncfs_sweeps (hash, started_at, sweeper) SELECT h, syncfs_now_ns(), \(sweeper) FROM doomed
                    ON CONFLICT (hash) DO UPDATE SET started_at = excluded.started_at, sweeper = excluded.sweeper
                    RETURNING hash),
                dropped AS (
                    DELETE FROM syncfs_chunks
                    WHERE hash = ANY(\(hexes)::text[]) AND state = \(PostgresChunkClaim.beingDeleted))
                SELECT hash FROM recorded
                """, logger: logger)
            var doomed: [ChunkHash] = []
            for try await hex in rows.decode(String.self) {
                if let hash = ChunkHash(hex: hex) { doomed.append(hash) }
            }
            return doomed
        }
    }

    /// Step 2: deletes the blobs of `hashes`, a few at a time; which went, and the first failure.
    private static func deleteBlobs(_ hashes: [ChunkHash], store: PostgresStore) async -> (
        succeeded: [ChunkHash], failure: ContainerProtocolError?
    ) {
        await withTaskGroup(of: (ChunkHash, ContainerProtocolError?).self) { group in
            var succeeded: [ChunkHash] = []
            var failure: ContainerProtocolError?
            var next = 0
            var inFlight = 0
            while next < hashes.count || inFlight > 0 {
                while next < hashes.count, inFlight < parallelDeletes {
                    let hash = hashes[next]
                    next += 1
                    inFlight += 1
                    group.addTask {
                        do throws(ContainerProtocolError) {
                            try await store.blobs.delete(hash)
                            return (hash, nil)
                        } catch { return (hash, error) }
                    }
                }
                guard let (hash, error) = await group.next() else { break }
                inFlight -= 1
                if let error { failure = failure ?? error } else { succeeded.append(hash) }
            }
            return (succeeded, failure)
        }
    }

    /// The hashes of sweep records older than `takeover` at `now` (their sweep died), at most
    /// `limit`: a collection sweeps them again.
    static func stale(now: Int64, store: PostgresStore, limit: Int = 100_000) async throws(ContainerProtocolError)
        -> [ChunkHash]
    {
        let before = now - PostgresChunkClaim.takeover.wholeNanoseconds
        return try await store.run("read unfinished sweeps") { client in
            let rows = try await client.query(
                "SELECT hash FROM syncfs_sweeps WHERE started_at < \(before) ORDER BY hash LIMIT \(limit)")
            var hashes: [ChunkHash] = []
            for try await hex in rows.decode(String.self) {
                if let hash = ChunkHash(hex: hex) { hashes.append(hash) }
            }
            return hashes
        }
    }
}
