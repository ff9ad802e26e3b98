import SyncBackend

/// One entry as stored: a value snapshot, independent of the live in-memory node.
struct EntryRecord: Equatable, Sendable {
    var ino: InodeNumber
    var fileID: FileID
    /// `nil` only for the root.
    var parent: InodeNumber?
    var name: FileName
    var kind: NodeKind
    /// Permission bits (`0o7777`), without the file-type bits.
    var mode: UInt32
    var uid: UInt32
    var gid: UInt32
    var size: Int64
    /// Times in nanoseconds since the Unix epoch.
    var atime: Int64
    var mtime: Int64
    var ctime: Int64
    var symlinkTarget: [UInt8]?
    /// Files: the content is not on this device (a placeholder; the sync base's manifest says
    /// what it is). Always false for directories and symlinks.
    var isPlaceholder: Bool = false
    /// Pinned on this device: kept downloaded, never evicted; a directory's pin covers everything
    /// below it. Local state, never synced.
    var isPinned: Bool = false
}

/// What the local copy of an entry last agreed with the container: that version and its chunks.
struct SyncBase: Equatable, Sendable {
    var version: EntryVersion
    var manifest: [ChunkRef]
}
