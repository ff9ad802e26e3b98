import SyncBackend

/// One entry's state as Core knows it (`SyncFileSystem.pathStatus`); the daemon makes the
/// `status PATH` answer (`PathStatus`) of it, so Core knows no reply type.
struct EntryStatus {
    /// Below the mount point.
    var path: String
    var kind: NodeKind
    var state: ContentState
    var pinned: PinState
    var size: Int64
    /// Files: what is on this device; directories: the same summed over the files below.
    var localBytes: Int64
    /// A transfer or hydration in progress: bytes done of total.
    var progress: (done: Int64, total: Int64)?
    /// Why the last upload failed, if it did.
    var error: String?
    /// Directories: the files below by state.
    var files: FileCounts?
    /// Files: the size; directories: the sizes of all files below.
    var totalBytes: Int64
}
