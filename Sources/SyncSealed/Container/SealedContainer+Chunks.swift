import Foundation
import SyncBackend
import Synchronization

/// Chunks: sealed under their keyed IDs with the newest epoch's keys; the engine's SHA-256 names translated.
extension SealedContainer {
    // MARK: - Chunks

    /// The newest epoch's keyed chunker. Before the keys are read (a mount that started offline),
    /// a chunker with a random table: its cuts match nothing anyone can compute, and the chunks
    /// cannot be sent before the keys are there anyway.
    public var chunker: ContentDefinedChunker {
        state.withLock { state in
            guard let newest = state.view.keyring?.newestEpoch, let keys = state.keys[newest] else {
                var generator = SystemRandomNumberGenerator()
                let standard = ContentDefinedChunker.standard
                return ContentDefinedChunker(
                    minSize: standard.minSize, averageSize: standard.averageSize, maxSize: standard.maxSize,
                    gearTable: (0..<256).map { _ in generator.next() })
            }
            if let (epoch, chunker) = state.chunker, epoch == newest { return chunker }
            let chunker = keys.chunker
            state.chunker = (newest, chunker)
            return chunker
        }
    }

    /// Reads the container first if it has not been read yet (a mount that started offline).
    func readOnce() async throws(ContainerProtocolError) {
        if state.withLock({ $0.view.head == nil }) { try await catchUp() }
    }

    private func newestKeys() async throws(ContainerProtocolError) -> EpochKeys {
        try await readOnce()
        return try state.withLock { state throws(ContainerProtocolError) in
            guard let newest = state.view.keyring?.newestEpoch, let keys = state.keys[newest] else {
                throw ContainerProtocolError.invalidRequest("this device holds no key of the newest epoch")
            }
            return keys
        }
    }

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try checkAlarm()
        let keys = try await newestKeys()
        let ids = hashes.map(keys.chunkID(for:))
        let missing = Set(try await inner.missingChunks(ids))
        return zip(hashes, ids).compactMap { missing.contains($0.1) ? $0.0 : nil }
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await putChunks([chunk])
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try checkAlarm()
        try CommitBatch.check(chunks)
        let keys = try await newestKeys()
        var sealed: [EncodedChunk] = []
        for chunk in chunks {
            // The engine's own chunks (its encoder made them): sealed as they are. A reader checks
            // the plain hash when it opens one.
            guard chunk.encoding == .raw || chunk.encoding == .zlib else {
                throw .invalidRequest("chunk \(chunk.hash) is not a plain chunk")
            }
            try ChunkValidation.check(chunk)
            let box = SealedChunkCodec.seal(chunk, keys: keys)
            sealed.append(
                EncodedChunk(hash: box.id, encoding: .sealed, plainLength: box.envelope.count, payload: box.envelope))
        }
        try await inner.putChunks(sealed)
        state.withLock { state in
            for chunk in chunks where state.chunkEpochs[chunk.hash] == nil {
                state.chunkEpochs[chunk.hash] = keys.epoch
            }
        }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try checkAlarm()
        try await readOnce()
        let (first, all) = try state.withLock { state throws(ContainerProtocolError) in
            guard let newest = state.view.keyring?.newestEpoch else {
                throw ContainerProtocolError.invalidRequest("the sealed container is not open")
            }
            return (state.chunkEpochs[hash] ?? newest, state.keys)
        }
        let order = [first] + all.keys.sorted(by: >).filter { $0 != first }
        for epoch in order {
            guard let keys = all[epoch] else { continue }
            let stored: EncodedChunk
            do {
                stored = try await inner.chunk(keys.chunkID(for: hash))
            } catch .chunkNotFound {
                continue
            }
            guard stored.encoding == .sealed else { throw .corruptChunk(hash) }
            do {
                return try SealedChunkCodec.open(
                    SealedChunk(id: stored.hash, envelope: stored.payload), as: hash, keys: keys)
            } catch {
                throw .corruptChunk(hash)
            }
        }
        throw .chunkNotFound(hash)
    }

    /// Seals `hashes` again under the newest epoch's keys when an older epoch stored them (the
    /// content of a version from before a new epoch, brought back): true if every one was found
    /// and stored again, false if one is in no epoch (or this device holds a single epoch).
    func resealFromOlderEpochs(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> Bool {
        guard !hashes.isEmpty, state.withLock({ $0.keys.count > 1 }) else { return false }
        do {
            _ = try await sealAgain(hashes)
        } catch .chunkNotFound {
            return false
        }
        return true
    }

    /// Reads each of `hashes` (opened under the epoch it is stored under) and stores it again,
    /// sealed under the newest epoch, a batch at a time; returns the plain bytes stored.
    func sealAgain(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> Int64 {
        var group = ChunkGroup()
        var bytes: Int64 = 0
        for hash in hashes {
            let chunk = try await self.chunk(hash)
            if !group.fits(chunk) { try await putChunks(group.take()) }
            group.add(chunk)
            bytes += Int64(chunk.plainLength)
        }
        if !group.chunks.isEmpty { try await putChunks(group.take()) }
        return bytes
    }
}

/// Plain chunks gathered for one `putChunks`, kept to half of `CommitBatch`'s bounds: sealing
/// pads each one, and the sealed batch must still fit them underneath.
private struct ChunkGroup {
    private(set) var chunks: [EncodedChunk] = []
    private var payloadBytes = 0
    private var plainBytes = 0

    func fits(_ chunk: EncodedChunk) -> Bool {
        chunks.isEmpty
            || (chunks.count < CommitBatch.maximumChunks / 2
                && payloadBytes + chunk.payload.count <= CommitBatch.maximumChunkBytes / 2
                && plainBytes + chunk.plainLength <= CommitBatch.maximumPlainBytes / 2)
    }

    mutating func add(_ chunk: EncodedChunk) {
        chunks.append(chunk)
        payloadBytes += chunk.payload.count
        plainBytes += chunk.plainLength
    }

    mutating func take() -> [EncodedChunk] {
        defer { self = ChunkGroup() }
        return chunks
    }
}
