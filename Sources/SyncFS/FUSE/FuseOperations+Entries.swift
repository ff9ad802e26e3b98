import CFuse
import Glibc

// Trampolines for names and attributes. Each copies the C arguments into Swift values, calls
// the file system, and replies exactly once.

func fuseLookup(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.of(req)
    do {
        let entry = try context.fileSystem.lookup(parent: inode(parent), name: fileName(name))
        if entry.attributes.kind != .directory, let caller = fuse_req_ctx(req) {
            context.readdirPlus.lookedUp(by: caller.pointee.pid, in: UInt64(parent), isDirectory: false)
        }
        replyEntry(req, entry, context)
    } catch .notFound {
        // A negative entry: the kernel may cache the absence for the timeout.
        var parameters = fuse_entry_param()
        parameters.entry_timeout = context.cacheTimeout
        fuse_reply_entry(req, &parameters)
    } catch {
        replyError(req, error)
    }
}

func fuseForget(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ count: UInt64) {
    FuseContext.of(req).fileSystem.forget(inode(ino), count: count)
    fuse_reply_none(req)
}

func fuseForgetMulti(_ req: fuse_req_t?, _ count: Int, _ forgets: UnsafeMutablePointer<fuse_forget_data>?) {
    let fileSystem = FuseContext.of(req).fileSystem
    for index in 0..<count {
        if let item = forgets?[index] { fileSystem.forget(inode(item.ino), count: item.nlookup) }
    }
    fuse_reply_none(req)
}

func fuseGetattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.of(req)
    do {
        replyAttributes(req, try context.fileSystem.getattr(inode(ino)), context)
    } catch {
        replyError(req, error)
    }
}

func fuseSetattr(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ attr: UnsafeMutablePointer<stat>?, _ toSet: Int32,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let context = FuseContext.of(req)
    guard let attr = attr?.pointee else { return replyError(req, .invalidArgument) }
    var changes = AttributeChanges()
    if toSet & FUSE_SET_ATTR_MODE != 0 { changes.mode = UInt32(attr.st_mode) }
    if toSet & FUSE_SET_ATTR_UID != 0 { changes.uid = attr.st_uid }
    if toSet & FUSE_SET_ATTR_GID != 0 { changes.gid = attr.st_gid }
    if toSet & FUSE_SET_ATTR_SIZE != 0 { changes.size = Int64(attr.st_size) }
    if toSet & FUSE_SET_ATTR_ATIME_NOW != 0 {
        changes.atime = .now
    } else if toSet & FUSE_SET_ATTR_ATIME != 0 {
        changes.atime = .at(attr.st_atim.nanoseconds)
    }
    if toSet & FUSE_SET_ATTR_MTIME_NOW != 0 {
        changes.mtime = .now
    } else if toSet & FUSE_SET_ATTR_MTIME != 0 {
        changes.mtime = .at(attr.st_mtim.nanoseconds)
    }
    if toSet & FUSE_SET_ATTR_CTIME != 0 { changes.ctime = attr.st_ctim.nanoseconds }
    if toSet & (FUSE_SET_ATTR_KILL_SUID | FUSE_SET_ATTR_KILL_SGID) != 0 { changes.killPrivileges = true }
    // A truncation answers the reads it cut short after its own answer (`AfterReply`).
    AfterReply.handling {
        do throws(FSError) {
            let handle = peekHandle(info, as: OpenFile.self)
            replyAttributes(
                req, try context.fileSystem.setattr(inode(ino), changes, handle: handle, caller: caller(req)), context)
        } catch {
            replyError(req, error)
        }
    }
}

func fuseReadlink(_ req: fuse_req_t?, _ ino: fuse_ino_t) {
    do {
        var target = try FuseContext.of(req).fileSystem.readlink(inode(ino))
        target.append(0)
        target.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                _ = fuse_reply_readlink(req, $0)
            }
        }
    } catch {
        replyError(req, error)
    }
}

func fuseMknod(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t, _ rdev: dev_t) {
    let context = FuseContext.of(req)
    do {
        let entry = try context.fileSystem.mknod(
            parent: inode(parent), name: fileName(name), mode: UInt32(mode), caller: caller(req))
        replyEntry(req, entry, context)
    } catch {
        replyError(req, error)
    }
}

func fuseMkdir(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t) {
    let context = FuseContext.of(req)
    do {
        let entry = try context.fileSystem.mkdir(
            parent: inode(parent), name: fileName(name), mode: UInt32(mode), caller: caller(req))
        replyEntry(req, entry, context)
    } catch {
        replyError(req, error)
    }
}

func fuseUnlink(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.of(req)
    do {
        try context.fileSystem.unlink(parent: inode(parent), name: fileName(name), caller: caller(req))
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}

func fuseRmdir(_ req: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let context = FuseContext.of(req)
    do {
        try context.fileSystem.rmdir(parent: inode(parent), name: fileName(name), caller: caller(req))
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}

func fuseSymlink(
    _ req: fuse_req_t?, _ link: UnsafePointer<CChar>?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?
) {
    let context = FuseContext.of(req)
    let target = link.map { Array(UnsafeRawBufferPointer(start: $0, count: strlen($0))) } ?? []
    do {
        let entry = try context.fileSystem.symlink(
            target: target, parent: inode(parent), name: fileName(name), caller: caller(req))
        replyEntry(req, entry, context)
    } catch {
        replyError(req, error)
    }
}

func fuseRename(
    _ req: fuse_req_t?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ newParent: fuse_ino_t,
    _ newName: UnsafePointer<CChar>?, _ flags: UInt32
) {
    let context = FuseContext.of(req)
    do {
        try context.fileSystem.rename(
            parent: inode(parent), name: fileName(name), newParent: inode(newParent), newName: fileName(newName),
            flags: RenameFlags(rawValue: flags), caller: caller(req))
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}

func fuseLink(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ newParent: fuse_ino_t, _ newName: UnsafePointer<CChar>?) {
    do {
        try FuseContext.of(req).fileSystem.link()
        replyError(req, .notPermitted)
    } catch {
        replyError(req, error)
    }
}

func fuseStatfs(_ req: fuse_req_t?, _ ino: fuse_ino_t) {
    do {
        let statistics = try FuseContext.of(req).fileSystem.statfs()
        var info = statvfs()
        info.f_bsize = UInt(statistics.blockSize)
        info.f_frsize = UInt(statistics.blockSize)
        info.f_blocks = fsblkcnt_t(statistics.blocks)
        info.f_bfree = fsblkcnt_t(statistics.blocksFree)
        info.f_bavail = fsblkcnt_t(statistics.blocksAvailable)
        info.f_files = fsfilcnt_t(statistics.files)
        info.f_ffree = fsfilcnt_t(statistics.filesFree)
        info.f_favail = fsfilcnt_t(statistics.filesFree)
        info.f_namemax = UInt(statistics.nameMax)
        fuse_reply_statfs(req, &info)
    } catch {
        replyError(req, error)
    }
}
