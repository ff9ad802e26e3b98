import CFuse
import Glibc

// Trampolines for extended attributes (`user.` namespace only).

func fuseSetxattr(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
    _ size: Int, _ flags: Int32
) {
    guard let name else { return replyError(req, .invalidArgument) }
    let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
    let mode: XattrSetMode =
        Int(flags) & XATTR_CREATE != 0 ? .create : Int(flags) & XATTR_REPLACE != 0 ? .replace : .any
    do {
        try FuseContext.of(req).fileSystem.xattrs.set(inode(ino), name: String(cString: name), value: bytes, mode: mode)
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}

func fuseGetxattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ size: Int) {
    guard let name else { return replyError(req, .invalidArgument) }
    // Names outside `user.` are never stored: answer without touching the file system. The
    // kernel asks for `security.capability` before writes, so this must stay cheap. Security
    // labels are "not supported" (see `KernelCachePolicy.isUnsupportedXattr`).
    if KernelCachePolicy.isUnsupportedXattr(name) { return replyError(req, .notSupported) }
    guard strncmp(name, "user.", 5) == 0 else { return replyError(req, .noAttribute) }
    do {
        let value = try FuseContext.of(req).fileSystem.xattrs.get(inode(ino), name: String(cString: name))
        replySized(req, value, size: size)
    } catch {
        replyError(req, error)
    }
}

func fuseListxattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int) {
    do {
        let names = try FuseContext.of(req).fileSystem.xattrs.list(inode(ino))
        var list: [UInt8] = []
        for name in names { list.append(contentsOf: Array(name.utf8) + [0]) }
        replySized(req, list, size: size)
    } catch {
        replyError(req, error)
    }
}

/// The xattr size protocol: size 0 asks for the length; a too-small buffer is ERANGE.
private func replySized(_ req: fuse_req_t?, _ bytes: [UInt8], size: Int) {
    if size == 0 {
        fuse_reply_xattr(req, bytes.count)
    } else if bytes.count > size {
        replyError(req, .range)
    } else {
        bytes.withUnsafeBytes {
            _ = fuse_reply_buf(req, $0.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
        }
    }
}

func fuseRemovexattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    guard let name else { return replyError(req, .invalidArgument) }
    do {
        try FuseContext.of(req).fileSystem.xattrs.remove(inode(ino), name: String(cString: name))
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}
