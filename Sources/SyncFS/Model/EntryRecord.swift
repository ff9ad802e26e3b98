import SyncBackend

/// One entry as stored: a value snapshot, independent of the live in-memory node.
public struct EntryRecord: Equatable, Sendable {
    public var ino: InodeNumber
    public var fileID: FileID
    /// `nil` only for the root.
    public var parent: InodeNumber?
    public var name: FileName
    public var kind: NodeKind
    /// Permission bits (`0o7777`), without the file-type bits.
    public var mode: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: Int64
    /// Times in nanoseconds since the Unix epoch.
    public var atime: Int64
    public var mtime: Int64
    public var ctime: Int64
    public var symlinkTarget: [UInt8]?
    /// Files: the content is not on this device (a placeholder; the sync base's manifest says
    /// what it is). Always false for directories and symlinks.
    public var isPlaceholder: Bool = false
    /// Pinned on this device: kept downloaded, never evicted; a directory's pin covers everything
    /// below it. Local state, never synced.
    public var isPinned: Bool = false

    public init(
        ino: InodeNumber, fileID: FileID, parent: InodeNumber?, name: FileName, kind: NodeKind,
        mode: UInt32, uid: UInt32, gid: UInt32, size: Int64, atime: Int64, mtime: Int64, ctime: Int64,
        symlinkTarget: [UInt8]?, isPlaceholder: Bool = false, isPinned: Bool = false
    ) {
        self.ino = ino
        self.fileID = fileID
        self.parent = parent
        self.name = name
        self.kind = kind
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.size = size
        self.atime = atime
        self.mtime = mtime
        self.ctime = ctime
        self.symlinkTarget = symlinkTarget
        self.isPlaceholder = isPlaceholder
        self.isPinned = isPinned
    }
}

/// What the local copy of an entry last agreed with the container: that version and its chunks.
public struct SyncBase: Equatable, Sendable {
    public var version: EntryVersion
    public var manifest: [ChunkRef]

    public init(version: EntryVersion, manifest: [ChunkRef]) {
        self.version = version
        self.manifest = manifest
    }
}
