import Glibc

/// A `ChunkBlobStore` over a local directory: the chunk files of `LocalChunkStore`
/// (`chunks/XY/<64 hex>` in `LocalChunkFile` format, written under a temporary name, fsync'd and
/// renamed), under a directory that holds the marker `syncfs-blobs` instead of a container's.
///
/// For a server whose entries live elsewhere (PostgreSQL) without an object store, and for
/// tests. The directory is made by `create(at:)` (mode 0700); `init(at:)` only opens it, and
/// every call first checks the marker, so a directory on an unplugged disk is `unavailable`,
/// never an empty store.
public struct LocalChunkBlobStore: ChunkBlobStore {
    /// The marker file of a blob directory.
    public static let markerName = "syncfs-blobs"

    let layout: LocalLayout
    private var chunks: LocalChunkStore { LocalChunkStore(layout: layout) }

    /// Opens an existing blob directory (`unavailable` if its marker is missing).
    public init(at directory: String) throws(ContainerProtocolError) {
        layout = LocalLayout(root: directory, marker: Self.markerName)
        try layout.checkReachable()
    }

    /// Creates the blob directory (mode 0700) and its marker if missing, then opens it.
    public static func create(at directory: String) throws(ContainerProtocolError) -> LocalChunkBlobStore {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw LocalFileIO.failure("cannot create the chunk directory \(directory)", errno: errno)
        }
        let layout = LocalLayout(root: directory, marker: markerName)
        if access(layout.markerPath, F_OK) != 0 {
            let fd = open(layout.markerPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw LocalFileIO.failure("cannot create \(layout.markerPath)", errno: errno) }
            close(fd)
        }
        return try LocalChunkBlobStore(at: directory)
    }

    public func put(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try ChunkValidation.check(chunk)
        try await LocalFileIO.offload { [layout, chunks] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            try chunks.store(chunk)
        }
    }

    /// The chunk files made durable together (`LocalChunkStore.store(batch:)`).
    public func put(batch chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        for chunk in chunks { try ChunkValidation.check(chunk) }
        try await LocalFileIO.offload { [layout, store = self.chunks] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            try store.store(batch: chunks)
        }
    }

    public func get(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await LocalFileIO.offload { [layout, chunks] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            return try chunks.load(hash)
        }
    }

    public func delete(_ hash: ChunkHash) async throws(ContainerProtocolError) {
        try await LocalFileIO.offload { [layout] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            guard unlink(layout.chunkPath(hash)) == 0 || errno == ENOENT else {
                throw LocalFileIO.failure("cannot delete chunk \(hash)", errno: errno)
            }
        }
    }
}
