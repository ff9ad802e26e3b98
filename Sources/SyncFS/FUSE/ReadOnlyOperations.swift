import CFuse
import Glibc

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
