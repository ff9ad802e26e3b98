import Glibc

/// Many chunks at once (`Container.putChunks`): the same files and the same guarantees as
/// `store(_:)`, with the cost of durability paid once per batch instead of once per chunk.
///
/// 1. Every chunk not already intact is written under its temporary name, without an fsync.
/// 2. One `syncfs(2)` of the container's filesystem makes all of their data durable.
/// 3. Each is renamed into place (so a file under its final name is still complete after a
///    power loss), and a second `syncfs` makes the renames (and any new shard directory)
///    durable before the call returns: a chunk a later commit references survives a crash.
///
/// `syncfs` also writes out other dirty data of that filesystem; two calls per batch are still
/// far fewer flushes than two per chunk. Where `syncfs` is not available (not glibc), each chunk
/// is stored as `store(_:)` stores it.
extension LocalChunkStore {
    func store(batch chunks: [EncodedChunk]) throws(ContainerProtocolError) {
        guard chunks.count > 1, let syncFileSystem = FileSystemSync.function else {
            for chunk in chunks { try store(chunk) }
            return
        }
        var staged: [(temporary: String, final: String, hash: ChunkHash)] = []
        var seen = Set<ChunkHash>()
        do throws(ContainerProtocolError) {
            for chunk in chunks where seen.insert(chunk.hash).inserted {
                let finalPath = layout.chunkPath(chunk.hash)
                if refreshIfIntact(finalPath) { continue }
                let shard = layout.shardPath(chunk.hash)
                _ = try makeDirectory(shard)
                staged.append((try writeTemporary(chunk, in: shard, syncing: false), finalPath, chunk.hash))
            }
            guard !staged.isEmpty else { return }
            try syncFileSystem(layout.chunksPath, "the data of \(staged.count) chunks")
            while let next = staged.first {
                guard rename(next.temporary, next.final) == 0 else {
                    throw LocalFileIO.failure("cannot store chunk \(next.hash)", errno: errno)
                }
                staged.removeFirst()
            }
        } catch {
            for item in staged { unlink(item.temporary) }
            throw error
        }
        try syncFileSystem(layout.chunksPath, "the names of the stored chunks")
    }
}

/// `syncfs(2)`, looked up in the C library at run time (the Swift overlay of glibc does not
/// declare it).
enum FileSystemSync {
    private typealias SyncFS = @convention(c) (Int32) -> Int32

    /// Syncs the filesystem holding `path` (a directory); nil where `syncfs` is not available.
    static let function: (@Sendable (String, String) throws(ContainerProtocolError) -> Void)? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "syncfs") else { return nil }
        let syncfs = unsafeBitCast(symbol, to: SyncFS.self)
        return { (path: String, what: String) throws(ContainerProtocolError) in
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw LocalFileIO.failure("cannot open \(path) to sync \(what)", errno: errno) }
            defer { close(fd) }
            guard syncfs(fd) == 0 else { throw LocalFileIO.failure("cannot sync \(what)", errno: errno) }
        }
    }()
}
