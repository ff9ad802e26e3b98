import CFuse
import Glibc

/// A viewer's mount (doc/SEMANTICS.md, "A viewer's mount"): while the container grants this
/// mount a viewer's rights only (`WriteAccess.refusesChanges`, one atomic load), every modifying
/// request is answered EROFS — setattr, mknod, mkdir, unlink, rmdir, symlink, rename, link,
/// create, fallocate, setxattr, removexattr, and an open for writing or truncation — and is
/// served as usual otherwise. Unlike `refuseModifications` (`--read-only`) the check is made at
/// each request: the role can change while the folder is mounted.
///
/// - `write` is not refused: it only comes through a handle opened for writing, which cannot be
///   made while the role is a viewer's; a handle opened before keeps its writes (with the
///   writeback cache the program's write had already returned: refusing the page would drop
///   bytes it was told were written). Its changes stay queued until an editor's rights return.
/// - The inotify echo's requests go through: they replay the container's own changes.
/// - Reads, lookups, listings, xattr reads and locks are untouched.
func refuseModificationsWhileViewing(_ operations: inout fuse_lowlevel_ops) {
    operations.setattr = { req, ino, attr, toSet, info in
        if refusesChange(req) { return }
        fuseSetattr(req, ino, attr, toSet, info)
    }
    operations.mknod = { req, parent, name, mode, rdev in
        if refusesChange(req) { return }
        fuseMknod(req, parent, name, mode, rdev)
    }
    operations.mkdir = { req, parent, name, mode in
        if refusesChange(req) { return }
        fuseMkdir(req, parent, name, mode)
    }
    operations.unlink = { req, parent, name in
        if refusesChange(req) { return }
        fuseUnlink(req, parent, name)
    }
    operations.rmdir = { req, parent, name in
        if refusesChange(req) { return }
        fuseRmdir(req, parent, name)
    }
    operations.symlink = { req, link, parent, name in
        if refusesChange(req) { return }
        fuseSymlink(req, link, parent, name)
    }
    operations.rename = { req, parent, name, newParent, newName, flags in
        if refusesChange(req) { return }
        fuseRename(req, parent, name, newParent, newName, flags)
    }
    operations.link = { req, ino, newParent, newName in
        if refusesChange(req) { return }
        fuseLink(req, ino, newParent, newName)
    }
    operations.create = { req, parent, name, mode, info in
        if refusesChange(req) { return }
        fuseCreate(req, parent, name, mode, info)
    }
    operations.fallocate = { req, ino, mode, offset, length, info in
        if refusesChange(req) { return }
        fuseFallocate(req, ino, mode, offset, length, info)
    }
    operations.setxattr = { req, ino, name, value, size, flags in
        if refusesChange(req) { return }
        fuseSetxattr(req, ino, name, value, size, flags)
    }
    operations.removexattr = { req, ino, name in
        if refusesChange(req) { return }
        fuseRemovexattr(req, ino, name)
    }
    operations.open = { req, ino, info in
        let flags = info?.pointee.flags ?? 0
        if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0, refusesChange(req) { return }
        fuseOpen(req, ino, info)
    }
}

/// Answers EROFS and returns true if the mount has a viewer's rights only and the request is
/// not the inotify echo's; false (nothing answered) otherwise.
@inline(__always)
private func refusesChange(_ req: fuse_req_t?) -> Bool {
    let fileSystem = FuseContext.of(req).fileSystem
    guard fileSystem.writeAccess.refusesChanges else { return false }
    if fileSystem.echo.channel.isEchoRequest(pid: caller(req).pid) { return false }
    fuse_reply_err(req, EROFS)
    return true
}
