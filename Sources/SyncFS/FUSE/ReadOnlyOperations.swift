import CFuse
import Glibc

/// Kernel mount flags a user can ask for (`--read-only`, `--allow-other`, `--no-exec`; `ro`,
/// `allow_other`, `noexec` in mount(8)'s `-o`). `default_permissions` is always on, so with
/// `allowOther` the kernel checks each user's access against the files' modes.
public struct MountKernelFlags: Sendable, Equatable {
    /// The kernel mount is read-only, and the daemon refuses modifying requests itself.
    public var readOnly = false
    /// FUSE `allow_other`: users other than the mounting one may use the folder (root's mounts
    /// always do).
    public var allowOther = false
    /// The mount is `noexec`.
    public var noExec = false

    public init(readOnly: Bool = false, allowOther: Bool = false, noExec: Bool = false) {
        self.readOnly = readOnly
        self.allowOther = allowOther
        self.noExec = noExec
    }

    /// The options for libfuse's mount (appended to the session's own), each with a leading comma.
    /// `allowOther` is applied by `FuseSession` (root gets it anyway).
    var fuseOptions: String {
        (readOnly ? ",ro" : "") + (noExec ? ",noexec" : "")
    }

    /// The same flags as `syncfs-mount mount` options (for the background daemon's command line).
    public var commandLine: [String] {
        (readOnly ? ["--read-only"] : []) + (allowOther ? ["--allow-other"] : []) + (noExec ? ["--no-exec"] : [])
    }
}

/// Defence in depth for a read-only mount: the kernel already refuses changes on an `ro` mount
/// (EROFS), and these replace every modifying operation of the table so the daemon refuses them
/// too should a request get through (an older kernel, a bug): setattr, mknod, mkdir, unlink,
/// rmdir, symlink, rename, link, create, write, fallocate, setxattr, removexattr, and an open for
/// writing or truncation. Reads, lookups and directory listings are untouched.
func refuseModifications(_ operations: inout fuse_lowlevel_ops) {
    operations.setattr = { req, _, _, _, _ in refuse(req) }
    operations.mknod = { req, _, _, _, _ in refuse(req) }
    operations.mkdir = { req, _, _, _ in refuse(req) }
    operations.unlink = { req, _, _ in refuse(req) }
    operations.rmdir = { req, _, _ in refuse(req) }
    operations.symlink = { req, _, _, _ in refuse(req) }
    operations.rename = { req, _, _, _, _, _ in refuse(req) }
    operations.link = { req, _, _, _ in refuse(req) }
    operations.create = { req, _, _, _, _ in refuse(req) }
    operations.write = { req, _, _, _, _, _ in refuse(req) }
    operations.write_buf = { req, _, _, _, _ in refuse(req) }
    operations.fallocate = { req, _, _, _, _, _ in refuse(req) }
    operations.setxattr = { req, _, _, _, _, _ in refuse(req) }
    operations.removexattr = { req, _, _ in refuse(req) }
    operations.open = { req, ino, info in
        let flags = info?.pointee.flags ?? 0
        if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 { return refuse(req) }
        fuseOpen(req, ino, info)
    }
}

/// Replies EROFS ("read-only file system").
private func refuse(_ req: fuse_req_t?) {
    fuse_reply_err(req, EROFS)
}
