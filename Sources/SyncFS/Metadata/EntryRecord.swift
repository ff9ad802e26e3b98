import SQLiteSupport
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

    public init(
        ino: InodeNumber, fileID: FileID, parent: InodeNumber?, name: FileName, kind: NodeKind,
        mode: UInt32, uid: UInt32, gid: UInt32, size: Int64, atime: Int64, mtime: Int64, ctime: Int64,
        symlinkTarget: [UInt8]?
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
    }
}

/// Everything the store holds, read once at mount.
public struct StoredState: Sendable {
    public var entries: [EntryRecord]
    /// Extended attributes by inode, name → value.
    public var xattrs: [InodeNumber: [String: [UInt8]]]
    /// Key/value facts (`container`, `next_ino`, `mount_count`, …).
    public var meta: [String: String]
}

/// One change to the stored state, in the order the folder made it.
enum MetadataChange: Sendable {
    case upsert(EntryRecord)
    case delete(InodeNumber)
    case setXattr(InodeNumber, name: String, value: [UInt8])
    case removeXattr(InodeNumber, name: String)
    case setMeta(key: String, value: String)
}

/// A failure of the state database.
public typealias MetadataError = SQLiteError
