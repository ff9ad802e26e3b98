import Glibc

/// Many chunks at once (`Container.putChunks`): the same files and the same guarantees as
/// `store(_:)`, each chunk's data fsync'd through the descriptor that wrote it (so a write error
/// is reported to this call, whoever else syncs the filesystem), then renamed into place; the
/// directories that changed are fsync'd once each, not once per chunk, before the call returns:
/// a chunk a later commit references survives a crash. No `syncfs`: it would also write out
/// every other dirty file of the filesystem (a mount's cache on the same disk), does not reach
/// the server on network and FUSE filesystems, and reports errors only to descriptors opened
/// before them.
extension LocalChunkStore {
    func store(batch chunks: [EncodedChunk]) throws(ContainerProtocolError) {
        var staged: [(temporary: String, final: String, hash: ChunkHash)] = []
        var directories: Set<String> = []
        var seen = Set<ChunkHash>()
        do throws(ContainerProtocolError) {
            for chunk in chunks where seen.insert(chunk.hash).inserted {
                let finalPath = layout.chunkPath(chunk.hash)
                if refreshIfIntact(finalPath) { continue }
                let shard = layout.shardPath(chunk.hash)
                if try makeDirectory(shard) { directories.insert(layout.chunksPath) }
                directories.insert(shard)
                staged.append((try writeTemporary(chunk, in: shard, syncing: true), finalPath, chunk.hash))
            }
            while let next = staged.first {
                guard rename(next.temporary, next.final) == 0 else {
                    let failure = errno
                    throw LocalFileIO.failure("cannot store chunk \(next.hash)", errno: failure)
                }
                staged.removeFirst()
            }
        } catch {
            for item in staged { unlink(item.temporary) }
            throw error
        }
        // Shards first, then `chunks/` (a new shard's own name).
        for directory in directories.sorted(by: { $0.count > $1.count }) {
            if let failure = LocalFileIO.syncDirectory(directory) {
                throw LocalFileIO.failure("cannot sync the directory \(directory) of stored chunks", errno: failure)
            }
        }
    }
}
