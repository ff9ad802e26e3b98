/// What a client proposes for an entry: everything about it that syncs.
///
/// Not synced (local to each mount): the owner (uid/gid; new entries belong to the local user),
/// atime and ctime, the inode number.
public struct EntryState: Equatable, Sendable, Codable {
    /// The parent directory; `nil` only for the root (`FileID.root`).
    public var parent: FileID?
    /// Raw name bytes (1...255, no `/` or NUL); empty only for the root.
    public var name: [UInt8]
    public var kind: NodeKind
    /// Permission bits (`0o7777`).
    public var mode: UInt32
    /// Modification time, nanoseconds since the Unix epoch.
    public var mtime: Int64
    /// Files: the length in bytes (the sum of the manifest's lengths). Others: 0.
    public var size: Int64
    /// `user.` extended attributes, name → value.
    public var xattrs: [String: [UInt8]]
    /// Symlinks only, and always for them.
    public var symlinkTarget: [UInt8]?
    /// Files only: the content as ordered chunks.
    public var manifest: [ChunkRef]

    public init(
        parent: FileID?, name: [UInt8], kind: NodeKind, mode: UInt32, mtime: Int64, size: Int64,
        xattrs: [String: [UInt8]] = [:], symlinkTarget: [UInt8]? = nil, manifest: [ChunkRef] = []
    ) {
        self.parent = parent
        self.name = name
        self.kind = kind
        self.mode = mode
        self.mtime = mtime
        self.size = size
        self.xattrs = xattrs
        self.symlinkTarget = symlinkTarget
        self.manifest = manifest
    }
}

/// A version number of a container. Each commit takes the next one, container-wide, so versions
/// also order the change feed. `0` means "no such entry yet" (the base of a create).
public typealias EntryVersion = UInt64

/// An entry as the container holds it: its state at `version`, or a tombstone.
public struct RemoteEntry: Equatable, Sendable, Codable {
    public var id: FileID
    public var version: EntryVersion
    /// A tombstone: the entry was deleted at `version`; `state` is its last state.
    public var isDeleted: Bool
    /// The device (client state directory) that made this version.
    public var device: String
    public var state: EntryState

    public init(id: FileID, version: EntryVersion, isDeleted: Bool, device: String, state: EntryState) {
        self.id = id
        self.version = version
        self.isDeleted = isDeleted
        self.device = device
        self.state = state
    }
}

/// A change a client asks the container to commit.
public struct CommitRequest: Equatable, Sendable, Codable {
    public enum Change: Equatable, Sendable, Codable {
        case put(EntryState)
        /// Leaves a tombstone. Only a live entry can be deleted (else `invalidRequest`).
        case delete
    }

    public var id: FileID
    /// The version the client's change starts from: `0` for a new entry; the tombstone's version
    /// to re-create a deleted entry (a put on a tombstone brings the entry back).
    public var baseVersion: EntryVersion
    public var change: Change
    public var device: String

    public init(id: FileID, baseVersion: EntryVersion, change: Change, device: String) {
        self.id = id
        self.baseVersion = baseVersion
        self.change = change
        self.device = device
    }
}

/// The container's answer to a commit. Every case but `committed` left the container unchanged.
public enum CommitOutcome: Equatable, Sendable, Codable {
    /// Applied; carries the new version (a tombstone for a delete).
    case committed(RemoteEntry)
    /// `baseVersion` is not the entry's current version (`0` for an absent entry): someone else
    /// changed it first. Carries the current entry, or nil if there is none.
    case versionConflict(current: RemoteEntry?)
    /// Another live entry already has this name in this parent.
    case nameTaken(by: RemoteEntry)
    /// The parent does not exist, is deleted, or is not a directory.
    case parentMissing
    /// A directory that still has live children cannot be deleted, nor become a file or symlink.
    case directoryNotEmpty
    /// The move would put a directory inside itself.
    case wouldCreateCycle
    /// Chunks of the manifest the container does not hold; upload them first.
    case chunksMissing([ChunkHash])
}

/// A position in a container's change feed. Opaque to clients: store it, hand it back.
public struct FeedCursor: Hashable, Sendable, Codable, CustomStringConvertible {
    public var token: String
    public init(token: String) { self.token = token }
    /// Before the first change.
    public static let beginning = FeedCursor(token: "")
    public var description: String { token.isEmpty ? "beginning" : token }
}

/// One page of the change feed.
public struct ChangeBatch: Equatable, Sendable, Codable {
    /// The newest version of each entry changed after the cursor, in commit order (an entry
    /// changed several times appears once, at its latest version; tombstones included).
    public var entries: [RemoteEntry]
    /// Where the next call starts.
    public var cursor: FeedCursor
    /// More changes are waiting beyond `cursor`: call again without waiting.
    public var moreComing: Bool

    public init(entries: [RemoteEntry], cursor: FeedCursor, moreComing: Bool) {
        self.entries = entries
        self.cursor = cursor
        self.moreComing = moreComing
    }
}
