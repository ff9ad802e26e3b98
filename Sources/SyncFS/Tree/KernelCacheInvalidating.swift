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
