/// Tells the kernel that what it cached about an inode or a name is no longer true.
///
/// Injected into `SyncFileSystem` by the FUSE adapter once the session exists (Core does not know
/// FUSE). Contract: never call it while holding the namespace lock — the kernel may answer an
/// invalidation with requests of its own.
protocol KernelCacheInvalidating: Sendable {
    /// The inode's attributes changed without a request that returned them (e.g. setuid cleared
    /// by a write).
    func attributesChanged(_ ino: InodeNumber)

    /// Makes the kernel write back the inode's dirty pages (and drop its cached pages), so the
    /// cache file holds every byte written. Blocks until the write-back has reached the daemon,
    /// which other worker threads serve.
    func writeBackPages(_ ino: InodeNumber)

    /// The name in the directory was added, removed or now points elsewhere.
    func entryChanged(parent: InodeNumber, name: FileName)

    /// The name no longer leads to `child`, which is gone: the kernel drops the name and the
    /// inode's link count (inotify watchers of the inode get IN_DELETE_SELF once it is unused).
    func entryDeleted(parent: InodeNumber, child: InodeNumber, name: FileName)
}

extension KernelCacheInvalidating {
    func entryDeleted(parent: InodeNumber, child: InodeNumber, name: FileName) {
        entryChanged(parent: parent, name: name)
    }
}

/// A kernel cache entry to drop after a change the kernel did not make itself.
enum KernelInvalidation {
    /// The name in the directory (added, removed or pointing elsewhere).
    case entry(parent: InodeNumber, name: FileName)
    /// Attributes only.
    case attributes(InodeNumber)
    /// Attributes and cached pages (the content was replaced).
    case content(InodeNumber)
    /// The name no longer leads to `child`, which is gone (deleted, or replaced by a new inode):
    /// the kernel also drops the inode's link count, so inotify watchers of the file itself get
    /// IN_DELETE_SELF, as after a local unlink or replace-by-rename.
    case deleted(parent: InodeNumber, child: InodeNumber, name: FileName)

    /// The name this invalidation tells the kernel about, if it is a name's.
    var name: (parent: InodeNumber, name: FileName)? {
        switch self {
        case .entry(let parent, let name), .deleted(let parent, _, let name): return (parent, name)
        case .attributes, .content: return nil
        }
    }

    /// The kernel takes the parent directory's lock to carry it out (see `LiveTree.perform`): a
    /// name's invalidation does.
    var takesDirectoryLock: Bool { name != nil }
}
