import Glibc
import SyncBackend

/// Moves file content between the local cache and a container, chunk by chunk.
///
/// Upload: the file is cut into content-defined chunks, each hashed and zlib-compressed; only the
/// chunks the container lacks are sent, in batches (bounded memory whatever the file size).
/// Download: every chunk is verified against its hash; chunks the local copy already holds (by
/// the base manifest) are read locally instead of downloaded.
struct ContentTransfer: Sendable {
    let container: BlockingContainer
    /// zlib level for uploads.
    let compressionLevel: Int32
    /// The chunker for the next file (the container's, if it decides: `ChunkingContainer`).
    var chunking: @Sendable () -> ContentDefinedChunker = { .standard }
    /// Chunks checked and sent per round trip.
    static let batchSize = 16

    /// Counters for `status` and the benchmark.
    struct Totals: Sendable {
        var plainBytesUploaded: Int64 = 0
        var encodedBytesUploaded: Int64 = 0
        var chunksUploaded = 0
        var chunksDownloaded = 0
        var bytesDownloaded: Int64 = 0

        mutating func add(_ other: Totals) {
            plainBytesUploaded += other.plainBytesUploaded
            encodedBytesUploaded += other.encodedBytesUploaded
            chunksUploaded += other.chunksUploaded
            chunksDownloaded += other.chunksDownloaded
            bytesDownloaded += other.bytesDownloaded
        }
    }

    /// Uploads the chunks of `length` bytes of `descriptor` the container lacks; returns the manifest.
    /// `progress` is told the bytes the container has so far (after each chunk sent and each batch).
    func upload(
        descriptor: Int32, length: Int64, totals: inout Totals, progress: (Int64) -> Void = { _ in }
    ) throws(SyncFailure) -> [ChunkRef] {
        var done: Int64 = 0
        var manifest: [ChunkRef] = []
        var batch: [EncodedChunk] = []
        var failure: SyncFailure?
        func flush() throws(SyncFailure) {
            guard !batch.isEmpty else { return }
            let pending = batch
            batch = []
            let missing = Set(try container.missingChunks(pending.map(\.hash)))
            var sent = Set<ChunkHash>()
            // What the container has: everything before this batch, then chunk by chunk (a
            // chunk under a low bandwidth limit takes a while: `sync` sees each one move).
            var had = done - pending.reduce(0) { $0 + Int64($1.plainLength) }
            for chunk in pending {
                had += Int64(chunk.plainLength)
                guard missing.contains(chunk.hash) && sent.insert(chunk.hash).inserted else { continue }
                try container.putChunk(chunk)
                totals.chunksUploaded += 1
                totals.plainBytesUploaded += Int64(chunk.plainLength)
                totals.encodedBytesUploaded += Int64(chunk.payload.count)
                progress(had)
            }
            progress(done)
        }
        let encoder = ChunkEncoder(level: compressionLevel)
        do {
            try FileChunker.forEachChunk(of: descriptor, length: length, chunker: chunking()) { bytes in
                let chunk = encoder.encode(bytes)
                manifest.append(ChunkRef(hash: chunk.hash, length: Int64(chunk.plainLength)))
                done += Int64(chunk.plainLength)
                batch.append(chunk)
                if batch.count >= Self.batchSize {
                    do throws(SyncFailure) { try flush() } catch {
                        failure = error
                        throw error
                    }
                }
            }
        } catch {
            if let failure { throw failure }
            throw .local("cannot read the cache file: \(error)")
        }
        try flush()
        return manifest
    }

    /// Fetches the chunk `ref` names, checks it is that chunk (hash, decoded length) and counts it.
    /// Every failure is the container's (`SyncFailure.container`), a bad chunk `corruptChunk`.
    /// A wait for the download limit ends once `cancelled` returns true.
    func plainChunk(
        _ ref: ChunkRef, totals: inout Totals, cancelled: () -> Bool = { false }
    ) throws(SyncFailure) -> [UInt8] {
        let chunk = try container.chunk(ref.hash, cancelled: cancelled)
        guard chunk.hash == ref.hash else { throw .container(.corruptChunk(ref.hash)) }
        let plain: [UInt8]
        do throws(ContainerProtocolError) { plain = try ChunkCodec.decode(chunk) } catch { throw .container(error) }
        guard plain.count == Int(ref.length) else { throw .container(.corruptChunk(ref.hash)) }
        totals.chunksDownloaded += 1
        totals.bytesDownloaded += Int64(chunk.payload.count)
        return plain
    }

    /// Writes the content of `manifest` to a new file at `path` (synced), reusing chunks found
    /// in `local` (a cache file holding `localManifest`).
    func download(
        _ manifest: [ChunkRef], to path: String, local: String?, localManifest: [ChunkRef], totals: inout Totals
    ) throws(SyncFailure) {
        let output = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw .local("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(output) }
        var reusable: [ChunkHash: Int64] = [:]
        var offset: Int64 = 0
        for ref in localManifest {
            reusable[ref.hash] = reusable[ref.hash] ?? offset
            offset += ref.length
        }
        let input = local.map { open($0, O_RDONLY | O_CLOEXEC) } ?? -1
        defer { if input >= 0 { close(input) } }
        var position: Int64 = 0
        for ref in manifest {
            var bytes: [UInt8]?
            if input >= 0, let at = reusable[ref.hash] {
                var local = [UInt8](repeating: 0, count: Int(ref.length))
                let count = local.withUnsafeMutableBytes { pread(input, $0.baseAddress, Int(ref.length), off_t(at)) }
                if count == Int(ref.length) && local.withUnsafeBytes({ ChunkCodec.hash($0) }) == ref.hash {
                    bytes = local
                }
            }
            if bytes == nil { bytes = try plainChunk(ref, totals: &totals) }
            let written = bytes!.withUnsafeBytes { pwrite(output, $0.baseAddress, $0.count, off_t(position)) }
            guard written == Int(ref.length) else {
                throw .local("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            position += ref.length
        }
        guard ftruncate(output, off_t(position)) == 0, fsync(output) == 0 else {
            throw .local("cannot sync \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Why a sync step failed: the container's error, or a local one (disk).
enum SyncFailure: Error, CustomStringConvertible {
    case container(ContainerProtocolError)
    case local(String)

    var isRetryable: Bool {
        switch self {
        case .container(let error): return error.isRetryable
        case .local: return true
        }
    }

    var description: String {
        switch self {
        case .container(let error): return error.description
        case .local(let reason): return reason
        }
    }
}
