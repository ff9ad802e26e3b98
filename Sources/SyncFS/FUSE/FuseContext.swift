import CFuse
import Glibc
import Logging

/// What every trampoline needs: the file system and the reply policy. Passed to libfuse as the
/// session's userdata and recovered with `fuse_req_userdata` (no globals).
final class FuseContext: Sendable {
    let fileSystem: SyncFileSystem
    let logger: Logger
    /// How long the kernel may cache attributes and names (positive and negative), in seconds.
    /// Safe to be long: every change reaches the folder through the kernel, and changes from
    /// elsewhere (the sync engine) invalidate the kernel's caches explicitly.
    let cacheTimeout: Double
    /// The session's `/dev/fuse` I/O state (killpriv v2 negotiation).
    let deviceIO = FuseDeviceIO()
    /// Reads waiting for a download, answered before the session goes (`PendingRead`).
    let pendingReads = PendingReads()
    /// Which readers' READDIRPLUS pages carry attributes (`ReaddirPlusReaders`).
    let readdirPlus = ReaddirPlusAdvisor()
    /// The mount's advisory locks; nil: the kernel keeps locks on this mount only.
    let locks: MountLocks?
    /// Lock requests waiting for their answer, answered before the session goes (`PendingLock`).
    let pendingLocks = PendingLocks()
    /// The operations' counts and sampled latencies (`--metrics-listen`); nil: not measured.
    let timing: FuseOperationTiming?

    init(
        fileSystem: SyncFileSystem, logger: Logger, cacheTimeout: Double, locks: MountLocks? = nil,
        timing: FuseOperationTiming? = nil
    ) {
        self.fileSystem = fileSystem
        self.logger = logger
        self.cacheTimeout = cacheTimeout
        self.locks = locks
        self.timing = timing
    }

    static func of(_ req: fuse_req_t?) -> FuseContext {
        Unmanaged<FuseContext>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    }
}

// MARK: Replies

/// Replies with the error's errno. Every failure reaches the kernel through here.
func replyError(_ req: fuse_req_t?, _ error: FSError) {
    fuse_reply_err(req, error.errno)
}

func replyEntry(_ req: fuse_req_t?, _ entry: EntryReply, _ context: FuseContext) {
    var parameters = makeEntryParameters(entry, context)
    fuse_reply_entry(req, &parameters)
}

func makeEntryParameters(_ entry: EntryReply, _ context: FuseContext) -> fuse_entry_param {
    var parameters = fuse_entry_param()
    parameters.ino = fuse_ino_t(entry.attributes.ino.rawValue)
    parameters.generation = entry.generation
    parameters.attr = makeStat(entry.attributes)
    parameters.attr_timeout = context.cacheTimeout
    parameters.entry_timeout = context.cacheTimeout
    return parameters
}

func replyAttributes(_ req: fuse_req_t?, _ attributes: FileAttributes, _ context: FuseContext) {
    var info = makeStat(attributes)
    fuse_reply_attr(req, &info, context.cacheTimeout)
}

func makeStat(_ attributes: FileAttributes) -> stat {
    var info = stat()
    info.st_ino = ino_t(attributes.ino.rawValue)
    let type: UInt32
    switch attributes.kind {
    case .file: type = UInt32(Glibc.S_IFREG)
    case .directory: type = UInt32(Glibc.S_IFDIR)
    case .symlink: type = UInt32(Glibc.S_IFLNK)
    }
    info.st_mode = mode_t(type | attributes.mode)
    info.st_nlink = nlink_t(attributes.nlink)
    info.st_uid = attributes.uid
    info.st_gid = attributes.gid
    info.st_size = off_t(attributes.size)
    info.st_blocks = blkcnt_t(attributes.blocks)
    info.st_blksize = 4096
    info.st_atim = timespec(nanoseconds: attributes.atime)
    info.st_mtim = timespec(nanoseconds: attributes.mtime)
    info.st_ctim = timespec(nanoseconds: attributes.ctime)
    return info
}

extension timespec {
    init(nanoseconds: Int64) {
        let (seconds, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        self.init(
            tv_sec: Int(remainder < 0 ? seconds - 1 : seconds),
            tv_nsec: Int(remainder < 0 ? remainder + 1_000_000_000 : remainder))
    }

    var nanoseconds: Int64 { Int64(tv_sec) * 1_000_000_000 + Int64(tv_nsec) }
}

// MARK: Arguments

func fileName(_ name: UnsafePointer<CChar>?) -> FileName {
    guard let name else { return FileName(bytes: []) }
    return FileName(bytes: Array(UnsafeRawBufferPointer(start: name, count: strlen(name))))
}

func caller(_ req: fuse_req_t?) -> Caller {
    guard let context = fuse_req_ctx(req) else { return Caller(uid: getuid(), gid: getgid()) }
    return Caller(uid: context.pointee.uid, gid: context.pointee.gid, pid: context.pointee.pid)
}

func inode(_ ino: fuse_ino_t) -> InodeNumber { InodeNumber(UInt64(ino)) }

// MARK: Handles in fi->fh

/// Stores a retained reference in `fi->fh`; `takeHandle` releases it exactly once.
func storeHandle<T: AnyObject>(_ object: T, in info: UnsafeMutablePointer<fuse_file_info>?) {
    info?.pointee.fh = UInt64(UInt(bitPattern: Unmanaged.passRetained(object).toOpaque()))
}

func peekHandle<T: AnyObject>(_ info: UnsafeMutablePointer<fuse_file_info>?, as type: T.Type) -> T? {
    guard let raw = info?.pointee.fh, raw != 0, let pointer = UnsafeRawPointer(bitPattern: UInt(raw)) else {
        return nil
    }
    return Unmanaged<T>.fromOpaque(pointer).takeUnretainedValue()
}

func takeHandle<T: AnyObject>(_ info: UnsafeMutablePointer<fuse_file_info>?, as type: T.Type) -> T? {
    guard let raw = info?.pointee.fh, raw != 0, let pointer = UnsafeRawPointer(bitPattern: UInt(raw)) else {
        return nil
    }
    info?.pointee.fh = 0
    return Unmanaged<T>.fromOpaque(pointer).takeRetainedValue()
}
