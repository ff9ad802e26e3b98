import Glibc
import SyncBackend

/// The local content of files: one cache file per file ID, under `STATE/cache/XY/<id>` where
/// `XY` are the ID's first two hex digits (256 shards keep directories small).
///
/// A cache file's length is the file's length; holes stay holes (sparse files cost no space).
/// Paths are built from the state directory and the ID only, never from the mount's paths, so
/// they stay short whatever the depth of the tree.
///
/// Every cache file is created, moved and removed through these methods, which keep `presence`
/// (which IDs have a cache file) current; code elsewhere may read and write an existing cache
/// file by its `path`, never create one (a file removed another way — `recover`, which runs
/// without a mount, takes them — only leaves its ID "maybe present": a `stat` then answers).
struct ContentCache: Sendable {
    let directory: String
    /// Shared by every copy of this value (see `CacheFilePresence`).
    private let presence = CacheFilePresence()

    /// Creates the cache directory if needed; shards are made when first used.
    init(directory: String) throws(FSError) {
        self.directory = directory
        try Self.makeDirectory(directory)
    }

    /// Makes the shard of `id` and syncs the cache directory, so the shard survives a crash.
    private func makeShard(of id: FileID) throws(FSError) {
        try Self.makeDirectory(directory + "/" + id.hex.prefix(2))
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
    }

    /// `open` of the cache file with `flags`, making its shard on first use.
    private func openCreating(_ id: FileID, flags: Int32) throws(FSError) -> Int32 {
        var fd = Glibc.open(path(for: id), flags | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 && errno == ENOENT {
            try makeShard(of: id)
            fd = Glibc.open(path(for: id), flags | O_CREAT | O_CLOEXEC, 0o600)
        }
        if fd < 0 { throw .fromErrno() }
        return fd
    }

    private static func hex2(_ value: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[value >> 4], digits[value & 15]])
    }

    private static func makeDirectory(_ path: String) throws(FSError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw .fromErrno() }
    }

    /// Where downloads are assembled before they are renamed into place (emptied at mount).
    var temporaryDirectory: String { directory + "/tmp" }

    /// A fresh path in the temporary directory (created on first use).
    func temporaryPath() -> String {
        _ = mkdir(temporaryDirectory, 0o700)
        return temporaryDirectory + "/" + FileID.random().hex
    }

    /// Moves a complete temporary file into place as `id`'s cache file, atomically replacing
    /// any previous one (open descriptors of the old one keep its content).
    func install(_ temporary: String, as id: FileID) throws(FSError) {
        try presence.creating(id) { () throws(FSError) in
            if rename(temporary, path(for: id)) == 0 { return }
            guard errno == ENOENT else { throw .fromErrno() }
            try makeShard(of: id)
            if rename(temporary, path(for: id)) != 0 { throw .fromErrno() }
        }
    }

    /// Makes `id`'s cache path a second name of `source`'s cache file, atomically replacing what
    /// was there (open descriptors of the old file keep its content). Returns false on failure.
    func linkContent(of source: FileID, as id: FileID) -> Bool {
        let temporary = temporaryPath()
        guard link(path(for: source), temporary) == 0 else { return false }
        guard (try? install(temporary, as: id)) != nil else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// Deletes every temporary file (left by a download a crash interrupted).
    func removeTemporaryFiles() {
        guard let dir = opendir(temporaryDirectory) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = entry.entryName
            if name != "." && name != ".." { unlink(temporaryDirectory + "/" + name) }
        }
    }

    func path(for id: FileID) -> String {
        directory + "/" + id.hex.prefix(2) + "/" + id.hex
    }

    /// Opens the cache file read-write, creating an empty one if it does not exist.
    /// The caller owns the returned descriptor.
    func open(_ id: FileID) throws(FSError) -> Int32 {
        // An existing file (the common case) is opened without the presence lock.
        let fd = Glibc.open(path(for: id), O_RDWR | O_CLOEXEC)
        if fd >= 0 { return fd }
        guard errno == ENOENT else { throw .fromErrno() }
        return try presence.creating(id) { () throws(FSError) in try openCreating(id, flags: O_RDWR) }
    }

    /// Creates an empty cache file (replacing any left-over of the same ID) and returns it open
    /// read-write; the caller owns the descriptor.
    func createAndOpen(_ id: FileID) throws(FSError) -> Int32 {
        try presence.creating(id) { () throws(FSError) in try openCreating(id, flags: O_RDWR | O_TRUNC) }
    }

    /// Creates an empty cache file, replacing any left-over of the same ID.
    func create(_ id: FileID) throws(FSError) {
        close(try createAndOpen(id))
    }

    func remove(_ id: FileID) {
        presence.removing(id) { unlink(path(for: id)) == 0 || errno == ENOENT }
    }

    /// Renames `id`'s cache file (if any) to `other`'s path; open descriptors follow it.
    /// False if it exists and could not be moved.
    func move(_ id: FileID, to other: FileID) -> Bool {
        presence.moving(id, to: other) {
            if rename(path(for: id), path(for: other)) == 0 { return true }
            if access(path(for: id), F_OK) != 0 && errno == ENOENT { return true }
            guard (try? makeShard(of: other)) != nil else { return false }
            return rename(path(for: id), path(for: other)) == 0
        }
    }

    /// True only if `id` certainly has no cache file now: the cache directory was listed
    /// (`allIDs`, at load) and no operation of this cache has created one since
    /// (`CacheFilePresence`). False means "maybe": `stat` it.
    func isKnownAbsent(_ id: FileID) -> Bool {
        presence.isKnownAbsent(id)
    }

    /// Bytes the cache file occupies on disk (0 if it does not exist).
    func allocatedBytes(of id: FileID) -> Int64 {
        var info = stat()
        guard stat(path(for: id), &info) == 0 else { return 0 }
        return Int64(info.st_blocks) * 512
    }

    /// Length of the cache file, or nil if it does not exist.
    func size(of id: FileID) -> Int64? {
        var info = stat()
        guard stat(path(for: id), &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// Makes the creation of `id`'s cache file durable (fsync of its shard directory).
    func syncDirectory(of id: FileID) throws(FSError) {
        let fd = Glibc.open(directory + "/" + id.hex.prefix(2), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw .fromErrno() }
        defer { close(fd) }
        if fsync(fd) != 0 { throw .fromErrno() }
    }

    /// Every file ID that has a cache file (for the consistency sweep at mount). A complete
    /// listing also starts `isKnownAbsent`'s answers (`CacheFilePresence.recordListing`).
    func allIDs() -> [FileID] {
        var complete = true
        let ids = listIDs(complete: &complete)
        if complete { presence.recordListing(ids) }
        return ids
    }

    private func listIDs(complete: inout Bool) -> [FileID] {
        var ids: [FileID] = []
        for shard in 0..<256 {
            guard let dir = opendir(directory + "/" + Self.hex2(shard)) else {
                if errno != ENOENT { complete = false }
                continue
            }
            defer { closedir(dir) }
            while true {
                errno = 0
                guard let entry = readdir(dir) else {
                    if errno != 0 { complete = false }
                    break
                }
                if let id = FileID(hex: entry.entryName) { ids.append(id) }
            }
        }
        return ids
    }
}
