import CFuse
import Glibc
import Logging

/// A failure to set up or run the FUSE session.
struct FuseSessionError: Error, CustomStringConvertible, Sendable {
    let description: String
}

/// One libfuse low-level session: the operation table, the kernel mount, the multithreaded loop.
///
/// Lifecycle: `init` creates and mounts; `run` serves requests until the mount goes away (an
/// unmount, or `exit()`); `unmount` removes the kernel mount if it is still there.
final class FuseSession: @unchecked Sendable {
    private let session: OpaquePointer
    private let context: Unmanaged<FuseContext>
    private let waker = SessionLoopWaker()
    let mountpoint: String

    /// Mount options: the kernel checks permissions (`default_permissions`); as root the folder
    /// is shared with every user (`allow_other`), each new file belonging to its creator. Unless
    /// `honoursSetuid`, the folder is `nosuid,nodev`: what other machines put in it cannot hand
    /// out privileges or reach devices here, whatever its mode bits say. With it the options say
    /// `suid,dev`, since libfuse mounts `nosuid,nodev` unless told otherwise (only root's mount
    /// can: fusermount3 keeps `nosuid,nodev` for every other user). `flags` adds `ro`,
    /// `allow_other` and `noexec` on request (`MountKernelFlags`). With `locks`, every flock and
    /// fcntl lock of the mount goes to it (`FuseOperations+Locks.swift`); without, the kernel
    /// keeps them, for this mount only. With `timing`, every operation of the table is counted
    /// and a sample timed (`FuseOperationTiming`).
    init(
        fileSystem: SyncFileSystem, mountpoint: String, fsName: String, cacheTimeout: Double,
        honoursSetuid: Bool = false, flags: MountKernelFlags = MountKernelFlags(), locks: MountLocks? = nil,
        timing: FuseOperationTiming? = nil, logger: Logger
    ) throws {
        self.mountpoint = mountpoint
        let safeName = fsName.map { $0 == "," || $0 == "\\" ? "_" : $0 }
        var options = "default_permissions,fsname=\(String(safeName)),subtype=syncfs"
        options += honoursSetuid ? ",suid,dev" : ",nosuid,nodev"
        if geteuid() == 0 || flags.allowOther { options += ",allow_other" }
        options += flags.fuseOptions
        let arguments = ["syncfs-mount", "-o", options]
        var cArguments = arguments.map { strdup($0) }
        defer { for argument in cArguments { free(argument) } }
        let context = Unmanaged.passRetained(
            FuseContext(
                fileSystem: fileSystem, logger: logger, cacheTimeout: cacheTimeout, locks: locks, timing: timing))
        self.context = context
        var operations = makeOperationTable()
        if locks != nil { addLockOperations(&operations) }
        if flags.readOnly {
            refuseModifications(&operations)
        } else {
            refuseModificationsWhileViewing(&operations)
        }
        timing?.wrap(&operations)
        let created = cArguments.withUnsafeMutableBufferPointer { buffer -> OpaquePointer? in
            var args = fuse_args(argc: Int32(buffer.count), argv: buffer.baseAddress, allocated: 0)
            return syncfs_session_new(&args, &operations, context.toOpaque())
        }
        guard let created else {
            context.release()
            throw FuseSessionError(description: "libfuse could not create a session")
        }
        session = created
        guard fuse_session_mount(session, mountpoint) == 0 else {
            fuse_session_destroy(session)
            context.release()
            throw FuseSessionError(description: "could not mount on \(mountpoint) (see the log above)")
        }
        var io = FuseDeviceIO.table()
        guard syncfs_session_custom_io(session, &io, fuse_session_fd(session)) == 0 else {
            fuse_session_unmount(session)
            fuse_session_destroy(session)
            context.release()
            throw FuseSessionError(description: "libfuse refused the device I/O hooks")
        }
        fileSystem.setInvalidator(KernelNotifier(session: session))
    }

    deinit {
        fuse_session_destroy(session)
        context.release()
    }

    /// Unblocks every signal in the calling thread (a process started in the background inherits
    /// some blocked) and ignores SIGPIPE. SIGINT, SIGTERM and SIGHUP are the daemon's own
    /// (`StopOnSignal`), not libfuse's: they end `run` only after the queue had its chance.
    func prepareSignals() {
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_UNBLOCK, &all, nil)
        Glibc.signal(SIGPIPE, SIG_IGN)
    }

    /// Serves requests on several threads until the session ends. Returns 0 on a clean end.
    func run(maxThreads: UInt32 = 16) -> Int32 {
        waker.loopStarting()
        let result = syncfs_session_loop_mt(session, maxThreads)
        waker.loopEnded()
        // Reads still waiting for downloads are answered now, while their session exists. The
        // kernel has usually aborted them already (the reader got ECONNABORTED; the reply only
        // frees the request); otherwise the reader gets ENOTCONN, as from a mount that is gone.
        context.takeUnretainedValue().pendingReads.endAll(with: .io(ENOTCONN))
        context.takeUnretainedValue().pendingLocks.endAll(errno: ENOTCONN)
        return result
    }

    /// Ends the session from another thread and returns once `run` returned: marks it exited,
    /// detaches the kernel mount (it disappears from the namespace at once) and wakes the loop
    /// (`SessionLoopWaker`) — even while programs still hold files or directories open in the
    /// folder, which keep the detached mount alive: their next calls on it fail with ENOTCONN once
    /// the daemon exits, as on any FUSE mount whose daemon is gone.
    func exit() {
        fuse_session_exit(session)
        Unmounter.detach(mountpoint)
        waker.wakeUntilEnded()
    }

    /// Gives the calling thread a descriptor table of its own without `/dev/fuse`: for a thread
    /// that makes calls on this mount (the inotify echo). Should the daemon be killed while such a
    /// call waits for a worker that will never answer, the kernel releases `/dev/fuse` once the
    /// other threads are gone, which aborts the connection and ends the call; if this thread held
    /// the device too, the process could never finish dying. False if it could not be done.
    func isolateCallingThreadFromDevice() -> Bool {
        Self.isolateCallingThread()
    }

    /// `unshare(CLONE_FILES)` — a copy of the process's descriptor table for the calling thread —
    /// then every copied descriptor from 3 up closed: the thread holds nothing the daemon opened
    /// (`/dev/fuse`, the databases, cache files, control connections). Without the second step the
    /// copies lived as long as the thread: a control client the daemon closed never saw the end of
    /// its connection, and a removed cache file kept its space. Standard input, output and error
    /// stay (the log). False if the table could not be made.
    static func isolateCallingThread() -> Bool {
        guard syncfs_unshare_files() == 0 else { return false }
        return syncfs_close_from(3) == 0
    }

    /// Removes the kernel mount if it is still there (after `run` returned).
    func unmount() {
        fuse_session_unmount(session)
    }
}

/// Builds the table of trampolines. Every operation the folder supports is set; the rest
/// (ioctl, poll, bmap, copy_file_range) fall back to the kernel's defaults, as do locks without
/// a lock service (`addLockOperations`).
private func makeOperationTable() -> fuse_lowlevel_ops {
    var operations = fuse_lowlevel_ops()
    operations.`init` = fuseInit
    operations.lookup = fuseLookup
    operations.forget = fuseForget
    operations.forget_multi = fuseForgetMulti
    operations.getattr = fuseGetattr
    operations.setattr = fuseSetattr
    operations.readlink = fuseReadlink
    operations.mknod = fuseMknod
    operations.mkdir = fuseMkdir
    operations.unlink = fuseUnlink
    operations.rmdir = fuseRmdir
    operations.symlink = fuseSymlink
    operations.rename = fuseRename
    operations.link = fuseLink
    operations.open = fuseOpen
    operations.read = fuseRead
    operations.write = fuseWrite
    operations.write_buf = fuseWriteBuf
    // No `flush` (unless locks are the daemon's: `addLockOperations`): libfuse answers ENOSYS
    // once and the kernel stops sending FLUSH on every close (fc->no_flush), saving a round trip
    // per close. Nothing is lost: `release` records what was written, and the writeback cache
    // has written the pages back before either.
    operations.release = fuseRelease
    operations.fsync = fuseFsync
    operations.opendir = fuseOpendir
    operations.readdir = fuseReaddir
    operations.readdirplus = fuseReaddirplus
    operations.releasedir = fuseReleasedir
    operations.fsyncdir = fuseFsyncdir
    operations.statfs = fuseStatfs
    operations.setxattr = fuseSetxattr
    operations.getxattr = fuseGetxattr
    operations.listxattr = fuseListxattr
    operations.removexattr = fuseRemovexattr
    operations.create = fuseCreate
    operations.fallocate = fuseFallocate
    operations.lseek = fuseLseek
    return operations
}

/// The lock operations. With `getlk`+`setlk` and `flock` set, libfuse asks the kernel for
/// FUSE_CAP_POSIX_LOCKS and FUSE_CAP_FLOCK_LOCKS (its INIT defaults; `fuseInit` keeps them), and
/// the kernel sends every lock request here instead of locking in itself. A POSIX lock ends when
/// its process closes any descriptor of the file: the kernel says so only in FLUSH (with the
/// closing lock owner), so `flush` is set too; it answers at once while no POSIX lock is held.
private func addLockOperations(_ operations: inout fuse_lowlevel_ops) {
    operations.getlk = fuseGetlk
    operations.setlk = fuseSetlk
    operations.flock = fuseFlock
    operations.flush = fuseFlush
}

/// Negotiates capabilities with the kernel: the writeback cache (writes return once in the page
/// cache; the kernel owns mtime and size while it holds dirty pages), atomic O_TRUNC, parallel
/// directory operations, nanosecond times, splice for replies from cache files (copied, never
/// moved: `replyFromCacheFile`); READDIRPLUS for
/// every directory read and no POSIX ACL support (`KernelCachePolicy.readdirPlusAlways`,
/// `.declaresPosixACL`: FUSE_CAP_POSIX_ACL is in the list below and then withdrawn). WRITE
/// requests are sized so that they are spliced (`FuseTransferSizes`).
private func fuseInit(_ userdata: UnsafeMutableRawPointer?, _ conn: UnsafeMutablePointer<fuse_conn_info>?) {
    guard let conn else { return }
    let wanted: [Int32] = [
        FUSE_CAP_WRITEBACK_CACHE, FUSE_CAP_ATOMIC_O_TRUNC, FUSE_CAP_PARALLEL_DIROPS, FUSE_CAP_SPLICE_WRITE,
        FUSE_CAP_SPLICE_READ, FUSE_CAP_POSIX_ACL,
    ]
    for capability in wanted where conn.pointee.capable & UInt32(capability) != 0 {
        conn.pointee.want |= UInt32(capability)
    }
    // Tree walks: see `KernelCachePolicy.readdirPlusAlways` and `.declaresPosixACL`.
    if KernelCachePolicy.readdirPlusAlways { conn.pointee.want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO) }
    if !KernelCachePolicy.declaresPosixACL { conn.pointee.want &= ~UInt32(FUSE_CAP_POSIX_ACL) }
    conn.pointee.time_gran = 1
    FuseBackgroundLimits.apply(to: conn)
    FuseTransferSizes.apply(to: conn)
}

/// Sends invalidations to the kernel through the session (`fuse_lowlevel_notify_inval_*`).
/// Valid for the session's life; the file system drops it at shutdown with the session.
private final class KernelNotifier: KernelCacheInvalidating, @unchecked Sendable {
    private let session: OpaquePointer

    init(session: OpaquePointer) { self.session = session }

    func attributesChanged(_ ino: InodeNumber) {
        // A negative offset invalidates the attributes only: no page-cache work, no inode lock.
        _ = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(ino.rawValue), -1, 0)
    }

    func entryChanged(parent: InodeNumber, name: FileName) {
        dropListing(parent)
        name.withUnsafeBytes { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                _ = fuse_lowlevel_notify_inval_entry(
                    session, fuse_ino_t(parent.rawValue), chars.baseAddress, chars.count)
            }
        }
    }

    func entryDeleted(parent: InodeNumber, child: InodeNumber, name: FileName) {
        dropListing(parent)
        name.withUnsafeBytes { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                // Also invalidates the name when the kernel's entry leads elsewhere (-ENOENT).
                _ = fuse_lowlevel_notify_delete(
                    session, fuse_ino_t(parent.rawValue), fuse_ino_t(child.rawValue), chars.baseAddress, chars.count)
            }
        }
    }

    /// Drops the directory's cached listing (its page cache; see
    /// `KernelCachePolicy.cachesListings`) and attributes. Takes no directory lock.
    private func dropListing(_ directory: InodeNumber) {
        guard KernelCachePolicy.cachesListings else { return }
        _ = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(directory.rawValue), 0, 0)
    }

    func writeBackPages(_ ino: InodeNumber) {
        // Invalidating the page range makes the kernel launder dirty pages (WRITE requests)
        // before dropping them.
        _ = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(ino.rawValue), 0, 0)
    }
}
