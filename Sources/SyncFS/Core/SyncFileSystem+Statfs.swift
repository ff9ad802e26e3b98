import Glibc

/// What `statfs` shows: the space of the disk that holds the cache.
struct FileSystemStatistics: Sendable {
    var blockSize: UInt64
    var blocks: UInt64
    var blocksFree: UInt64
    var blocksAvailable: UInt64
    var files: UInt64
    var filesFree: UInt64
    var nameMax: UInt64
}

extension SyncFileSystem {
    func statfs() throws(FSError) -> FileSystemStatistics {
        var info = statvfs()
        guard statvfs(statePath, &info) == 0 else { throw .fromErrno() }
        let count = live.transact { UInt64($0.nodes.count) }
        return FileSystemStatistics(
            blockSize: UInt64(info.f_frsize), blocks: UInt64(info.f_blocks), blocksFree: UInt64(info.f_bfree),
            blocksAvailable: UInt64(info.f_bavail), files: count + UInt64(info.f_ffree),
            filesFree: UInt64(info.f_ffree), nameMax: UInt64(FileName.maxLength))
    }
}
