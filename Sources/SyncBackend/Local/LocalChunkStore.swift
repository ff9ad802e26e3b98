import Glibc

/// The chunk files of a local container: `chunks/XY/<64 hex>`, in `LocalChunkFile` format.
///
/// Invariants:
/// - A file under its final name is complete: it is written under a temporary name in the same
///   shard directory (`.tmp-…`, never 64 hex digits, so never taken for a chunk), fsync'd, then
///   renamed into place; the shard directory is fsync'd after the rename (and `chunks/` after a
///   shard is made), so a chunk a commit refers to survives a power loss with that commit.
/// - Chunk files are never modified once in place, except that a file whose header is damaged is
///   replaced by the next `put` of the same hash. A `put` of a chunk already there refreshes its
///   file's mtime: the garbage collection (`LocalCollector`) never deletes a chunk stored or
///   stored again within its grace period, and removes a chunk file only while it holds the
///   database's write lock.
///
/// Several processes may write the same chunk at once: each uses its own temporary file and the
/// renames replace like with like. Every call is synchronous and blocking (see `LocalFileIO`).
struct LocalChunkStore: Sendable {
    let layout: LocalLayout

    /// Which of `hashes` have no chunk file, in the order given.
    func missing(_ hashes: [ChunkHash]) throws(ContainerProtocolError) -> [ChunkHash] {
        var missing: [ChunkHash] = []
        for hash in hashes where !(try exists(hash)) { missing.append(hash) }
        return missing
    }

    func exists(_ hash: ChunkHash) throws(ContainerProtocolError) -> Bool {
        if access(layout.chunkPath(hash), F_OK) == 0 { return true }
        let code = errno
        guard code == ENOENT else { throw LocalFileIO.failure("cannot look up chunk \(hash)", errno: code) }
        return false
    }

    func load(_ hash: ChunkHash) throws(ContainerProtocolError) -> EncodedChunk {
        switch LocalFileIO.readAll(layout.chunkPath(hash)) {
        case .success(let bytes):
            guard let chunk = LocalChunkFile.decode(bytes, hash: hash) else { throw .corruptChunk(hash) }
            return chunk
        case .failure(let error):
            if error.code == ENOENT {
                try layout.checkReachable()
                throw .chunkNotFound(hash)
            }
            throw LocalFileIO.failure("cannot read chunk \(hash)", errno: error.code)
        }
    }

    func store(_ chunk: EncodedChunk) throws(ContainerProtocolError) {
        let finalPath = layout.chunkPath(chunk.hash)
        if refreshIfIntact(finalPath) { return }
        let shard = layout.shardPath(chunk.hash)
        let madeShard = try makeDirectory(shard)
        let temporary = try writeTemporary(chunk, in: shard, syncing: true)
        if rename(temporary, finalPath) != 0 {
            let failure = errno
            unlink(temporary)
            throw LocalFileIO.failure("cannot store chunk \(chunk.hash)", errno: failure)
        }
        if let failure = LocalFileIO.syncDirectory(shard)
            ?? (madeShard ? LocalFileIO.syncDirectory(layout.chunksPath) : nil)
        {
            throw LocalFileIO.failure("cannot sync the directory of chunk \(chunk.hash)", errno: failure)
        }
    }

    /// Writes `chunk`'s file under a new temporary name in `shard` (fsync'd if `syncing`) and
    /// returns its path; on failure nothing is left behind.
    func writeTemporary(_ chunk: EncodedChunk, in shard: String, syncing: Bool) throws(ContainerProtocolError)
        -> String
    {
        var random = SystemRandomNumberGenerator()
        let temporary =
            shard + "/.tmp-\(chunk.hash.hex.prefix(16))-\(getpid())-\(String(random.next() as UInt64, radix: 16))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LocalFileIO.failure("cannot create a chunk file in \(shard)", errno: errno) }
        var failure = LocalFileIO.writeAll(fd, LocalChunkFile.encode(chunk))
        if failure == nil, syncing, fsync(fd) != 0 { failure = errno }
        if close(fd) != 0, failure == nil { failure = errno }
        if let failure {
            unlink(temporary)
            throw LocalFileIO.failure("cannot store chunk \(chunk.hash)", errno: failure)
        }
        return temporary
    }

    /// Whether the file at `path` exists with a header of ours (its payload is not checked); if so
    /// its mtime is set to now (a new grace period against the garbage collection) and it is
    /// checked to be still in place afterwards (a collection may have just removed it: then it is
    /// written again).
    func refreshIfIntact(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: LocalChunkFile.headerSize)
        let count = header.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count == LocalChunkFile.headerSize, LocalChunkFile.header(header) != nil else { return false }
        // Owner-only files: this user may set their times. If it cannot (a container of another
        // user's), the chunk is written again under a new file, which is as good.
        guard futimens(fd, nil) == 0 else { return false }
        var opened = stat()
        var named = stat()
        return fstat(fd, &opened) == 0 && stat(path, &named) == 0 && opened.st_ino == named.st_ino
            && opened.st_dev == named.st_dev
    }

    /// Creates `path` (and `chunks/` if needed), mode 0700; true if this call made it.
    func makeDirectory(_ path: String) throws(ContainerProtocolError) -> Bool {
        if mkdir(path, 0o700) == 0 { return true }
        var code = errno
        if code == EEXIST { return false }
        if code == ENOENT {
            try layout.checkReachable()
            if mkdir(layout.chunksPath, 0o700) == 0 || errno == EEXIST {
                if mkdir(path, 0o700) == 0 { return true }
                if errno == EEXIST { return false }
            }
            code = errno
        }
        throw LocalFileIO.failure("cannot create the chunk directory \(path)", errno: code)
    }
}
