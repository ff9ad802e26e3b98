import Glibc
import SyncBackend
import Synchronization

/// A file, directory or symlink as the running folder knows it.
///
/// Concurrency contract: every `var` is read and written only under the file system's namespace
/// lock. The atomics are the exception: the write path updates them without any lock (it
/// holds the node through its open handle), and readers under the lock see their latest values.
final class Node: @unchecked Sendable {
    // Stored properties are laid out in this order (Swift keeps a class's order): the words
    // first, then the one-byte fields together, so that a node takes no padding it need not
    // (`NodeFootprintTests`).
    let ino: InodeNumber
    /// The content state the node holds (`ContentLifecycle.Held`, packed; `Node+Content.swift`):
    /// changed only by `apply` (the machine) and the write path's `noteContentWritten`.
    let content: Atomic<UInt64>
    /// The file's length (files whose content is local: also the cache file's length).
    let size: Atomic<Int64>
    let mtime: Atomic<Int64>
    /// Content changes begun and finished (writes, truncates): a seqlock for the uploader, which
    /// reads the cache file without a lock and keeps what it read only if no change began before
    /// it finished (`ContentToken`).
    let contentChangesStarted = Atomic<UInt64>(0)
    let contentChangesFinished = Atomic<UInt64>(0)
    private let identity: Mutex<FileID>
    /// The stable identity. Changes only when a save-by-rename hands the replaced file's identity
    /// to its replacement (`SyncFileSystem.rename`); behind its own lock because the data path
    /// (`fsync`) reads it without the namespace lock.
    var fileID: FileID {
        get { identity.withLock { $0 } }
        set { identity.withLock { $0 = newValue } }
    }
    /// `nil` for the root and for an unlinked node that the kernel or a handle still holds.
    var parent: InodeNumber?
    let kind: NodeKind
    /// Set once the node has been removed from the tree.
    var isUnlinked = false
    /// Removed by a remote change (deleted, or replaced by a new inode), not by a local unlink or
    /// rename: a write-open through a name the kernel still caches gets ESTALE (see `open`).
    var removedRemotely = false
    /// Pinned on this device (see `EntryRecord.isPinned`).
    var isPinned: Bool
    /// This clean local file's cached copy has not yet been checked against its manifest's chunk
    /// hashes since the mount: its reads check the chunks they cover first
    /// (`CacheVerifier.verifyCachedContent`). Set at load only (`Namespace.load`), cleared
    /// under the namespace lock once every chunk was checked, the copy was discarded, or the file
    /// became something a program wrote; the read path checks it without a lock.
    let contentUnverified = Atomic<Bool>(false)
    /// Content changed (written, truncated through a handle) since the last `modified` event;
    /// the event goes out when the last writer closes or on `fsync` (one per burst).
    let changedSinceEvent = Atomic<Bool>(false)
    /// The cache file's directory entry is known to be on disk (false for a file created in this
    /// mount until its first `fsync`), so `fsync` syncs the cache directory only once per file.
    let cacheEntryDurable = Atomic<Bool>(true)
    /// `mode` has setuid, or setgid with group-execute: a write by an unprivileged caller must
    /// clear them (the daemon's duty under killpriv v2). Lets the write path check without a lock.
    let hasSetIDBits: Atomic<Bool>
    private var tallyFlags = NodeTally.Flags()
    var mode: UInt32 {
        didSet { hasSetIDBits.store(Self.hasSetID(mode), ordering: .relaxed) }
    }
    var uid: UInt32
    var gid: UInt32
    /// What this node adds to the tree's counts (`tally`), its size; its flags are stored with
    /// the other one-byte fields.
    private var tallySize: Int64 = 0
    var name: FileName
    var atime: Int64
    var ctime: Int64
    /// When a program last opened or closed the file (for least-recently-used eviction).
    var lastUsed: Int64
    /// The fields most nodes never use (`Node+SeldomUsed.swift`): nil while all of them are
    /// empty. Read and change them only through their properties there.
    var seldomUsed: SeldomUsedFields?
    /// Files: the cache file's allocated 512-byte blocks as last measured, and the content state
    /// they were measured in (`AllocatedBlocks`). Read and written under the namespace lock.
    var allocatedBlocks: AllocatedBlocks? {
        get { measuredBlocks?.value }
        set { measuredBlocks = newValue.map(MeasuredBlocks.init) }
    }
    /// Boxed: 8 bytes in every node instead of 48; only measured local files have one.
    private var measuredBlocks: MeasuredBlocks?
    private final class MeasuredBlocks {
        let value: AllocatedBlocks
        init(_ value: AllocatedBlocks) { self.value = value }
    }

    /// What this node adds to the tree's counts, as last counted (`TreeCounts`). Under the
    /// namespace lock.
    var tally: NodeTally {
        get { NodeTally(flags: tallyFlags, size: tallySize) }
        set {
            tallyFlags = newValue.flags
            tallySize = newValue.size
        }
    }

    static func hasSetID(_ mode: UInt32) -> Bool {
        mode & UInt32(S_ISUID) != 0 || (mode & UInt32(S_ISGID) != 0 && mode & UInt32(S_IXGRP) != 0)
    }

    /// The mode after a privilege kill: setuid cleared, setgid cleared if group-executable.
    static func killingPrivileges(_ mode: UInt32) -> UInt32 {
        var result = mode & ~UInt32(S_ISUID)
        if result & UInt32(S_IXGRP) != 0 { result &= ~UInt32(S_ISGID) }
        return result
    }

    init(record: EntryRecord, xattrs: [String: [UInt8]]) {
        ino = record.ino
        identity = Mutex(record.fileID)
        kind = record.kind
        parent = record.parent
        name = record.name
        mode = record.mode
        uid = record.uid
        gid = record.gid
        atime = record.atime
        ctime = record.ctime
        size = Atomic(record.size)
        mtime = Atomic(record.mtime)
        hasSetIDBits = Atomic(Self.hasSetID(record.mode))
        let residency: ContentLifecycle.Residency = record.kind == .file && record.isPlaceholder ? .placeholder : .local
        content = Atomic(ContentLifecycle.Held(residency: residency).word)
        isPinned = record.isPinned
        lastUsed = max(record.atime, record.mtime)
        if let target = record.symlinkTarget { symlinkTarget = target }
        if !xattrs.isEmpty { self.xattrs = xattrs }
    }

    /// A value snapshot for the store. Call under the namespace lock.
    var record: EntryRecord {
        EntryRecord(
            ino: ino, fileID: fileID, parent: parent, name: name, kind: kind, mode: mode, uid: uid, gid: gid,
            size: size.load(ordering: .relaxed), atime: atime, mtime: mtime.load(ordering: .relaxed), ctime: ctime,
            symlinkTarget: symlinkTarget, isPlaceholder: isPlaceholder, isPinned: isPinned)
    }

    /// Call before changing the cache file's bytes or length; pair with `endContentChange`.
    func beginContentChange() { contentChangesStarted.add(1, ordering: .sequentiallyConsistent) }
    func endContentChange() { contentChangesFinished.add(1, ordering: .sequentiallyConsistent) }

    /// The content's state for an upload that starts now; nil while a change is in progress.
    func contentToken() -> UInt64? {
        let started = contentChangesStarted.load(ordering: .sequentiallyConsistent)
        let finished = contentChangesFinished.load(ordering: .sequentiallyConsistent)
        return started == finished ? started : nil
    }

    /// True if no content change began since `token` was taken.
    func contentUnchanged(since token: UInt64) -> Bool {
        contentChangesStarted.load(ordering: .sequentiallyConsistent) == token
    }

    /// Records that bytes up to `end` were written, at `now` if given (lock-free; the write path).
    func noteWrite(end: Int64, now: Int64?) {
        var current = size.load(ordering: .relaxed)
        while end > current {
            let (exchanged, original) = size.compareExchange(
                expected: current, desired: end, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        if let now { mtime.store(now, ordering: .relaxed) }
        noteContentWritten()
        changedSinceEvent.store(true, ordering: .relaxed)
    }
}

/// What `stat` shows of a node.
struct FileAttributes: Equatable, Sendable {
    var ino: InodeNumber
    var kind: NodeKind
    /// Permission bits only (`0o7777`).
    var mode: UInt32
    var nlink: UInt32
    var uid: UInt32
    var gid: UInt32
    var size: Int64
    /// 512-byte blocks allocated in the local cache.
    var blocks: Int64
    var atime: Int64
    var mtime: Int64
    var ctime: Int64
}

/// Who makes a request (from the kernel's request header).
struct Caller: Sendable {
    var uid: UInt32
    var gid: UInt32
    /// The calling thread's id as the kernel gave it (0 when unknown): how the daemon's own echo
    /// thread is told apart (`EchoRequests.request(from:)`).
    var pid: Int32
    init(uid: UInt32, gid: UInt32, pid: Int32 = 0) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }

    /// This process, for calls that do not come from the kernel (tests, the daemon's own work).
    static var thisProcess: Caller { Caller(uid: getuid(), gid: getgid()) }
}

/// An entry handed to the kernel: its attributes and the generation of its inode number.
struct EntryReply: Sendable {
    var attributes: FileAttributes
    var generation: UInt64
}
