import SyncBackend

/// Content of several small files sent together: each file is cut and encoded in memory
/// (`encode`), then one `missingChunks` asks for all of them and only the missing chunks go, in
/// `putChunks` calls within `CommitBatch`'s limits (`send`).
extension ContentTransfer {
    /// The encoded chunks of `length` bytes of `descriptor`, in order (held in memory: for files
    /// small enough to go with others in one batch). `encoder` is the calling thread's.
    func encode(descriptor: Int32, length: Int64, with encoder: ChunkEncoder) throws(SyncFailure) -> [EncodedChunk] {
        var chunks: [EncodedChunk] = []
        do {
            try FileChunker.forEachChunk(of: descriptor, length: length, chunker: chunking()) { bytes in
                chunks.append(encoder.encode(bytes))
            }
        } catch {
            throw .local("cannot read the cache file: \(error)")
        }
        return chunks
    }

    /// Sends those of `chunks` the container lacks (each once): one `missingChunks` for all of
    /// them, then as few `putChunks` calls as `CommitBatch.maximumChunks` and
    /// `CommitBatch.maximumChunkBytes` allow.
    func send(_ chunks: [EncodedChunk], totals: inout Totals) throws(SyncFailure) {
        var unique: [EncodedChunk] = []
        var seen = Set<ChunkHash>()
        for chunk in chunks where seen.insert(chunk.hash).inserted { unique.append(chunk) }
        guard !unique.isEmpty else { return }
        var missing: Set<ChunkHash> = []
        var asked = 0
        while asked < unique.count {
            let next = min(unique.count, asked + WireProtocol.maxMissingCheckHashes)
            missing.formUnion(try container.missingChunks(unique[asked..<next].map(\.hash)))
            asked = next
        }
        var group: [EncodedChunk] = []
        var groupBytes = 0
        func flush() throws(SyncFailure) {
            guard !group.isEmpty else { return }
            try container.putChunks(group)
            for chunk in group {
                totals.chunksUploaded += 1
                totals.plainBytesUploaded += Int64(chunk.plainLength)
                totals.encodedBytesUploaded += Int64(chunk.payload.count)
            }
            group = []
            groupBytes = 0
        }
        for chunk in unique where missing.contains(chunk.hash) {
            if group.count == CommitBatch.maximumChunks
                || groupBytes + chunk.payload.count > CommitBatch.maximumChunkBytes
            {
                try flush()
            }
            group.append(chunk)
            groupBytes += chunk.payload.count
        }
        try flush()
    }
}
