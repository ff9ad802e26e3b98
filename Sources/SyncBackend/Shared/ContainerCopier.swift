/// A container that can take another container's entries as they are: the destination of
/// `ContainerCopier` (`syncfs-mount container copy`).
///
/// Contract: `importEntries` writes each entry with its own ID, version, device and tombstone
/// flag (no commit rules, no new versions) and raises the container's version counter to the
/// newest imported version; entries already there are overwritten (so importing again after an
/// interruption is harmless). Every chunk the entries' manifests name must be stored first.
/// Only for a container no client uses yet (a staged copy).
public protocol ImportableContainer: Container {
    func importEntries(_ entries: [RemoteEntry]) async throws(ContainerProtocolError)
}

/// What a copy did (or found already there).
public struct ContainerCopyReport: Sendable, Equatable {
    /// Entries copied (each at its newest version; tombstones included).
    public var entries = 0
    /// The newest version copied: the destination's version counter.
    public var version: EntryVersion = 0
    /// Chunks read from the source, verified and stored in the destination.
    public var chunksCopied = 0
    /// Their size as stored (encoded, usually compressed).
    public var bytesCopied: Int64 = 0
    /// Chunks the destination held already (an earlier, interrupted run; or shared content).
    public var chunksPresent = 0
    public init() {}
}

/// Why a copy stopped. Nothing was published: the destination's staged copy stays, and running
/// the copy again resumes it.
public enum ContainerCopyError: Error, Equatable, CustomStringConvertible {
    /// Reading the source failed.
    case source(ContainerProtocolError)
    /// Writing the destination failed.
    case destination(ContainerProtocolError)
    /// A chunk the source returned does not decode to bytes with its hash: never copied.
    case damagedChunk(ChunkHash, String)
    /// The source changed while it was copied (a mount or server still writes to it).
    case sourceChanged
    /// An entry of the source breaks the rules every container keeps (`EntryStateRules`), or
    /// its feed is out of order: never copied (the copy would store what clients refuse).
    case damagedEntry(FileID, String)

    public var description: String {
        switch self {
        case .source(let error): return "cannot read the source: \(error)"
        case .destination(let error): return "cannot write the destination: \(error)"
        case .damagedChunk(let hash, let why):
            return "chunk \(hash) in the source is damaged (\(why)); nothing was published"
        case .sourceChanged:
            return "the source changed during the copy: stop the servers and mounts that write to it, and copy again"
        case .damagedEntry(let id, let why):
            return "entry \(id) in the source is damaged (\(why)); nothing was published"
        }
    }
}

/// Copies every entry of a container's change feed, and every chunk their manifests name, into
/// an `ImportableContainer`, keeping IDs and versions: a client's cursor and base versions stay
/// valid against the copy.
///
/// Contract:
/// - Entries go in feed (version) order, a page at a time; a page's chunks are stored (and
///   checked present) before its entries are imported, so the copy never names a chunk it lacks.
/// - Every chunk read from the source is decoded and its SHA-256 compared with its name before
///   it is stored (a sealed chunk, whose name only its client can check, has its length
///   checked); a damaged chunk stops the copy (`damagedChunk`). Every entry is checked
///   against `EntryStateRules`, and the versions must rise strictly (`damagedEntry`): the
///   import bypasses the commit rules, so a hostile or damaged source is refused here.
/// - Up to `concurrentChunks` chunks are copied at once; the first failure stops the rest.
/// - Chunks the destination already holds are not read again (`missingChunks`): a second run
///   after an interruption resumes where the first stopped.
/// - At the end the source's feed is read again past the last copied version: anything there
///   (`sourceChanged`) fails the copy, so a copy is one consistent state of the source.
public enum ContainerCopier {
    /// Entries per page of the source's feed.
    public static let pageSize = 1000
    /// Chunks read, verified and stored at once (each up to ~32 MiB in memory while it is).
    public static let concurrentChunks = 4

    public static func copy(
        from source: any Container, to destination: any ImportableContainer,
        progress: @Sendable (ContainerCopyReport) -> Void = { _ in }
    ) async throws(ContainerCopyError) -> ContainerCopyReport {
        var report = ContainerCopyReport()
        var cursor = FeedCursor.beginning
        while true {
            let batch: ChangeBatch
            do { batch = try await source.changes(after: cursor, limit: pageSize) } catch { throw .source(error) }
            try check(batch.entries, after: report.version)
            try await copyChunks(of: batch.entries, from: source, to: destination, report: &report)
            if !batch.entries.isEmpty {
                do { try await destination.importEntries(batch.entries) } catch { throw .destination(error) }
                report.entries += batch.entries.count
                report.version = batch.entries.map(\.version).max() ?? report.version
                progress(report)
            }
            cursor = batch.cursor
            if !batch.moreComing { break }
        }
        let later: ChangeBatch
        do { later = try await source.changes(after: cursor, limit: 1) } catch { throw .source(error) }
        guard later.entries.isEmpty else { throw .sourceChanged }
        return report
    }

    /// Stores in `destination` every chunk of `entries`' manifests it lacks, read from `source`
    /// and verified.
    private static func copyChunks(
        of entries: [RemoteEntry], from source: any Container, to destination: any ImportableContainer,
        report: inout ContainerCopyReport
    ) async throws(ContainerCopyError) {
        var seen = Set<ChunkHash>()
        let hashes = entries.flatMap { $0.state.manifest.map(\.hash) }.filter { seen.insert($0).inserted }
        guard !hashes.isEmpty else { return }
        let missing: [ChunkHash]
        do { missing = try await destination.missingChunks(hashes) } catch { throw .destination(error) }
        report.chunksPresent += hashes.count - missing.count
        // A few at once: the object store's round trips and the local disk's fsyncs overlap.
        var failure: ContainerCopyError?
        await withTaskGroup(of: Result<Int, ContainerCopyError>.self) { group in
            var pending = missing.makeIterator()
            for _ in 0..<concurrentChunks {
                guard let hash = pending.next() else { break }
                group.addTask { await copyChunk(hash, from: source, to: destination) }
            }
            while let result = await group.next() {
                switch result {
                case .success(let bytes):
                    report.chunksCopied += 1
                    report.bytesCopied += Int64(bytes)
                    if let hash = pending.next() {
                        group.addTask { await copyChunk(hash, from: source, to: destination) }
                    }
                case .failure(let error):
                    if failure == nil { failure = error }
                    group.cancelAll()
                }
            }
        }
        if let failure { throw failure }
    }

    /// Reads, verifies and stores one chunk; its stored size.
    private static func copyChunk(
        _ hash: ChunkHash, from source: any Container, to destination: any ImportableContainer
    ) async -> Result<Int, ContainerCopyError> {
        let chunk: EncodedChunk
        do {
            chunk = try await source.chunk(hash)
        } catch .corruptChunk {
            return .failure(.damagedChunk(hash, "the source cannot read it"))
        } catch {
            return .failure(.source(error))
        }
        do { try verify(chunk, named: hash) } catch { return .failure(error) }
        do { try await destination.putChunk(chunk) } catch { return .failure(.destination(error)) }
        return .success(chunk.payload.count)
    }

    /// Checks each entry's state and that versions rise strictly from `previous`.
    static func check(_ entries: [RemoteEntry], after previous: EntryVersion) throws(ContainerCopyError) {
        var last = previous
        for entry in entries {
            guard entry.version > last, entry.version <= FeedPosition.newestPossibleVersion else {
                throw .damagedEntry(entry.id, "version \(entry.version) does not follow \(last)")
            }
            last = entry.version
            do { try EntryStateRules.check(entry.state, of: entry.id) } catch {
                throw .damagedEntry(entry.id, "\(error)")
            }
        }
    }

    /// Checks that `chunk` is the one asked for and decodes to bytes whose SHA-256 is its name, or,
    /// sealed, holds its plain length (`ChunkCodec.verifyShape`).
    static func verify(_ chunk: EncodedChunk, named hash: ChunkHash) throws(ContainerCopyError) {
        guard chunk.hash == hash else { throw .damagedChunk(hash, "the source returned chunk \(chunk.hash)") }
        do { try ChunkCodec.verifyShape(chunk) } catch {
            throw .damagedChunk(
                hash,
                chunk.encoding == .sealed ? "its sealed payload is not its length" : "its bytes do not match its hash")
        }
    }
}
