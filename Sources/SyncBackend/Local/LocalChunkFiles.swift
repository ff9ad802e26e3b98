import Glibc

/// The chunk files of a local container as listed once (`chunks/XY/<64 hex>`), for the garbage
/// collection and the storage figures. Only names a chunk would have count (two lowercase hex
/// digits, then 64 whose first two are the shard's); anything else is left alone, except the
/// temporary files of `LocalChunkStore` (`.tmp-…`), which `removeStaleTemporaryFiles` may remove.
struct LocalChunkFiles {
    /// What one file is.
    struct Info {
        var size: Int64
        /// Nanoseconds since the epoch.
        var mtime: Int64
        /// From the header, when asked for (0 for a damaged header).
        var plainLength: Int64 = 0

        /// Whether it was stored (or stored again) less than `grace` nanoseconds ago.
        func isWithin(_ grace: Int64) -> Bool { WallClock.nanoseconds() - mtime < grace }
    }

    let layout: LocalLayout
    private(set) var chunks: [ChunkHash] = []
    private var temporaryFiles: [String] = []

    init(layout: LocalLayout) throws(ContainerProtocolError) {
        self.layout = layout
        for shard in try Self.names(in: layout.chunksPath) where Self.isShard(shard) {
            for name in try Self.names(in: layout.chunksPath + "/" + shard) {
                if name.hasPrefix(".tmp-") {
                    temporaryFiles.append(layout.chunksPath + "/" + shard + "/" + name)
                } else if name.utf8.count == 64, name.hasPrefix(shard), let hash = ChunkHash(hex: name),
                    hash.hex == name
                {
                    chunks.append(hash)
                }
            }
        }
    }

    /// The file of `hash` now, or nil if it is gone.
    func info(_ hash: ChunkHash, readingHeader: Bool = false) -> Info? {
        Self.info(layout.chunkPath(hash), readingHeader: readingHeader)
    }

    static func info(_ path: String, readingHeader: Bool = false) -> Info? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        var info = Info(
            size: Int64(status.st_size),
            mtime: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec))
        if readingHeader, case .success(let header) = LocalFileIO.readPrefix(path, count: LocalChunkFile.headerSize),
            let (_, plainLength) = LocalChunkFile.header(header)
        {
            info.plainLength = Int64(plainLength)
        }
        return info
    }

    /// Removes the temporary files not modified for `age` nanoseconds (their writers are gone:
    /// a write takes seconds). Failures are ignored: they are retried next time.
    func removeStaleTemporaryFiles(olderThan age: Int64) {
        for path in temporaryFiles {
            if let info = Self.info(path), !info.isWithin(age) { unlink(path) }
        }
    }

    private static func isShard(_ name: String) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The names in directory `path` (without `.` and `..`). A directory that cannot be listed is
    /// a failure, never an empty list (nothing is deleted on a guess).
    private static func names(in path: String) throws(ContainerProtocolError) -> [String] {
        guard let directory = opendir(path) else {
            throw LocalFileIO.failure("cannot list \(path)", errno: errno)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = entry.localEntryName
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
