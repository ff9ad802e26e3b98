import CFuse
import Glibc
import SyncBackend

// Trampolines for directories. Listings come from a snapshot held by the open directory handle.

func fuseOpendir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.of(req)
    do {
        let handle = try context.fileSystem.opendir(inode(ino))
        storeHandle(handle, in: info)
        // The kernel keeps the listing (`KernelCachePolicy.cachesListings`): dropped on local
        // changes by the kernel itself, on remote ones by the notifier's entry invalidations.
        info?.pointee.cache_readdir = KernelCachePolicy.cachesListings ? 1 : 0
        info?.pointee.keep_cache = KernelCachePolicy.cachesListings ? 1 : 0
        if fuse_reply_open(req, info) != 0, let handle = takeHandle(info, as: OpenDirectory.self) {
            context.fileSystem.releasedir(handle)
        }
    } catch {
        replyError(req, error)
    }
}

func fuseReaddir(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    fillDirectory(req, size: size, offset: offset, info: info, plus: false)
}

func fuseReaddirplus(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    fillDirectory(req, size: size, offset: offset, info: info, plus: true)
}

/// Fills one reply buffer of entries from `offset` on. The offset given with an entry is the
/// index of the next one, so a listing resumes exactly where the kernel's buffer ended.
/// readdirplus counts a lookup for each entry that fits (never for `.` and `..`) and undoes the
/// count of the one that did not fit.
private func fillDirectory(
    _ req: fuse_req_t?, size: Int, offset: off_t, info: UnsafeMutablePointer<fuse_file_info>?, plus: Bool
) {
    let context = FuseContext.of(req)
    guard let handle = peekHandle(info, as: OpenDirectory.self) else { return replyError(req, .badHandle) }
    let entries: ArraySlice<OpenDirectory.Entry>
    do {
        entries = try context.fileSystem.readdir(handle, offset: Int(offset))
    } catch {
        return replyError(req, error)
    }
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
    defer { buffer.deallocate() }
    var used = 0
    for (index, entry) in zip(entries.indices, entries) {
        let nextOffset = off_t(index + 1)
        let isDot = index < 2
        var added = 0
        entry.name.bytes.withUnsafeBufferPointer { nameBytes in
            var name = [CChar](repeating: 0, count: nameBytes.count + 1)
            for (position, byte) in nameBytes.enumerated() { name[position] = CChar(bitPattern: byte) }
            if plus {
                var parameters = fuse_entry_param()
                var counted = false
                if !isDot, let reply = context.fileSystem.readdirPlusEntry(entry) {
                    parameters = makeEntryParameters(reply, context)
                    counted = true
                } else {
                    parameters.attr.st_ino = ino_t(entry.ino.rawValue)
                    parameters.attr.st_mode = mode_t(Glibc.S_IFDIR)
                }
                added = fuse_add_direntry_plus(req, buffer + used, size - used, name, &parameters, nextOffset)
                if added > size - used && counted { context.fileSystem.forget(entry.ino, count: 1) }
            } else {
                var info = stat()
                info.st_ino = ino_t(entry.ino.rawValue)
                info.st_mode = directoryType(entry.kind)
                added = fuse_add_direntry(req, buffer + used, size - used, name, &info, nextOffset)
            }
        }
        if added > size - used { break }
        used += added
    }
    fuse_reply_buf(req, buffer, used)
}

private func directoryType(_ kind: NodeKind) -> mode_t {
    switch kind {
    case .file: return Glibc.S_IFREG
    case .directory: return Glibc.S_IFDIR
    case .symlink: return Glibc.S_IFLNK
    }
}

func fuseReleasedir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    if let handle = takeHandle(info, as: OpenDirectory.self) { FuseContext.of(req).fileSystem.releasedir(handle) }
    fuse_reply_err(req, 0)
}

func fuseFsyncdir(
    _ req: fuse_req_t?, _ ino: fuse_ino_t, _ dataOnly: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    do {
        try FuseContext.of(req).fileSystem.fsyncdir()
        fuse_reply_err(req, 0)
    } catch {
        replyError(req, error)
    }
}
