import Glibc

/// Where everything of a local container lives, relative to its directory:
///
///     syncfs-container.json   the marker: format and container ID (JSON)
///     container.db            entries and the version counter (SQLite, WAL mode; plus -wal, -shm)
///     changes.signal          touched after every commit; followers watch it with inotify
///     chunks/XY/<64 hex>      one file per chunk, XY the first two hex digits of its hash
///
/// See doc/FORMATS.md, "Local container".
struct LocalLayout: Sendable {
    static let markerName = "syncfs-container.json"
    static let databaseName = "container.db"
    static let signalName = "changes.signal"
    static let chunksName = "chunks"

    let root: String
    /// The file whose presence says the directory is reachable (`checkReachable`): the container
    /// marker, or `LocalChunkBlobStore.markerName` for a blob directory.
    var marker: String = Self.markerName

    var markerPath: String { root + "/" + marker }
    var databasePath: String { root + "/" + Self.databaseName }
    var signalPath: String { root + "/" + Self.signalName }
    var chunksPath: String { root + "/" + Self.chunksName }

    func shardPath(_ hash: ChunkHash) -> String { chunksPath + "/" + hash.hex.prefix(2) }
    func chunkPath(_ hash: ChunkHash) -> String { shardPath(hash) + "/" + hash.hex }

    /// Throws `unavailable` unless the marker is there. Every operation checks this first: a
    /// container on an unplugged disk (its mount point now an empty directory) must read as
    /// "not reachable", never as "empty", and nothing may be created in its place.
    func checkReachable() throws(ContainerProtocolError) {
        guard access(markerPath, F_OK) == 0 else {
            throw .unavailable("the container at \(root) is not reachable (\(LocalFileIO.errorText(errno)))")
        }
    }
}
