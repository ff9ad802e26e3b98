import CFuse
import Glibc
import SyncBackend

// Trampolines for directories. Listings come from a snapshot held by the open directory handle.

func fuseOpendir(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let context = FuseContext.of(req)
    do {
        let handle = try context.fileSystem.listings.opendir(inode(ino))
        storeHandle(handle, in: info)
        // The kernel keeps the listing (`KernelCachePolicy.cachesListings`): dropped on local
        // changes by the kernel itself, on remote ones by the notifier's entry invalidations.
        info?.pointee.cache_readdir = KernelCachePolicy.cachesListings ? 1 : 0
        info?.pointee.keep_cache = KernelCachePolicy.cachesListings ? 1 : 0
        if fuse_reply_open(req, info) != 0, let handle = takeHandle(info, as: OpenDirectory.self) {
            context.fileSystem.listings.releasedir(handle)
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
    // Names only for a reader that has not shown it stats what it lists (`ReaddirPlusReaders`).
    let reader = fuse_req_ctx(req)?.pointee.pid ?? 0
    let attributes = FuseContext.of(req).readdirPlus.attributesWanted(by: reader, listing: UInt64(ino))
    fillDirectory(req, size: size, offset: offset, info: info, plus: true, attributes: attributes)
}

/// Fills one reply buffer of entries from `offset` on. The offset given with an entry is the
/// index of the next one, so a listing resumes exactly where the kernel's buffer ended.
/// readdirplus first counts how many entries fit (their sizes depend on the names only), then,
/// with `attributes`, takes the attributes of exactly those in one transaction
/// (`readdirPlusEntries`), which counts a lookup for each (never for `.` and `..`): every counted
/// entry is sent. Without `attributes` every entry is a name and type (node ID 0), which the
/// kernel does not instantiate and nothing counts.
/// One entry's name as a C string, in a buffer reused for every entry of a reply.
private struct EntryNames {
    private var buffer: [CChar]

    init() {
        buffer = []
        buffer.reserveCapacity(FileName.maxLength + 1)
    }

    mutating func with<R>(_ entry: OpenDirectory.Entry, _ body: (UnsafePointer<CChar>) -> R) -> R {
        buffer.removeAll(keepingCapacity: true)
        entry.name.withUnsafeBytes { for byte in $0 { buffer.append(CChar(bitPattern: byte)) } }
        buffer.append(0)
        return buffer.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// How many of `listed` fit in a READDIRPLUS reply of `size` bytes (sized before any attribute
/// is looked up).
private func plusEntriesFitting(
    _ req: fuse_req_t?, _ listed: ArraySlice<OpenDirectory.Entry>, size: Int, names: inout EntryNames
) -> Int {
    var fitting = 0
    var needed = 0
    for entry in listed {
        needed += names.with(entry) { fuse_add_direntry_plus(req, nil, 0, $0, nil, 0) }
        if needed > size { break }
        fitting += 1
    }
    return fitting
}

private func fillDirectory(
    _ req: fuse_req_t?, size: Int, offset: off_t, info: UnsafeMutablePointer<fuse_file_info>?, plus: Bool,
    attributes: Bool = false
) {
    let context = FuseContext.of(req)
    guard let handle = peekHandle(info, as: OpenDirectory.self) else { return replyError(req, .badHandle) }
    let listed: ArraySlice<OpenDirectory.Entry>
    do {
        listed = try context.fileSystem.listings.readdir(handle, offset: Int(offset))
    } catch {
        return replyError(req, error)
    }
    var names = EntryNames()
    func withName<R>(_ entry: OpenDirectory.Entry, _ body: (UnsafePointer<CChar>) -> R) -> R {
        names.with(entry, body)
    }
    let entries: ArraySlice<OpenDirectory.Entry>
    var replies: [EntryReply?] = []
    if plus {
        entries = listed.prefix(plusEntriesFitting(req, listed, size: size, names: &names))
        replies =
            attributes
            ? context.fileSystem.listings.readdirPlusEntries(entries) : Array(repeating: nil, count: entries.count)
    } else {
        entries = listed
    }
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
    defer { buffer.deallocate() }
    var used = 0
    for (position, (index, entry)) in zip(entries.indices, entries).enumerated() {
        let nextOffset = off_t(index + 1)
        let added: Int
        if plus {
            var parameters = fuse_entry_param()
            if let reply = replies[position] {
                parameters = makeEntryParameters(reply, context)
            } else {
                // Names only, `.`, `..`, or a child gone since the snapshot: a name without
                // attributes (entry ino 0), which the kernel does not instantiate.
                parameters.attr.st_ino = ino_t(entry.ino.rawValue)
                parameters.attr.st_mode = directoryType(entry.kind)
            }
            added = withName(entry) {
                fuse_add_direntry_plus(req, buffer + used, size - used, $0, &parameters, nextOffset)
            }
        } else {
            var info = stat()
            info.st_ino = ino_t(entry.ino.rawValue)
            info.st_mode = directoryType(entry.kind)
            added = withName(entry) { fuse_add_direntry(req, buffer + used, size - used, $0, &info, nextOffset) }
        }
        if added > size - used {
            // Only plain entries get here (plus entries were sized first); nothing was counted.
            break
        }
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
    if let handle = takeHandle(info, as: OpenDirectory.self) {
        FuseContext.of(req).fileSystem.listings.releasedir(handle)
    }
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
