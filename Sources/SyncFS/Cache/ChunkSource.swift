import SyncBackend

/// Why a chunk of a placeholder could not be had.
enum ChunkFetchError: Error, Sendable {
    /// The container cannot be reached now; a later try may work.
    case unreachable(String)
    /// The container answered, but lacks the chunk or sent one that fails verification.
    case unavailable(String)
}

/// Where placeholders' content comes from (the sync engine, once it runs).
protocol ChunkSource: Sendable {
    /// The plain bytes of `ref`, verified against its hash and length. Blocks the caller; a wait
    /// for the bandwidth limit ends (`unavailable`) once `cancelled` returns true.
    func plainChunk(_ ref: ChunkRef, cancelled: () -> Bool) throws(ChunkFetchError) -> [UInt8]
}
