import Glibc
import SyncBackend

/// `O_PATH` (Linux), which Glibc's Swift overlay does not export: a descriptor that names a file
/// without opening it (no FUSE open request), usable as the directory of `*at` calls.
private let openPathOnly: Int32 = 0o10000000

/// The daemon's calls on its own mount point, made relative to a descriptor of the mount root
/// (`openat`-family calls, one path component at a time, `O_NOFOLLOW`, never leaving the
/// mount's filesystem), never through a host path built from names. Even a name that slipped
/// past validation cannot make these calls touch anything outside the folder.
///
/// Used by the inotify echo thread; its descriptors live in that thread's own descriptor table
/// (`FuseSession.isolateCallingThreadFromDevice`), hence `/proc/thread-self` for the two calls
/// that have no descriptor-relative form (`truncate` by path, `chmod` without following).
final class BeneathMount {
    private let mountpoint: String

    init(mountpoint: String) { self.mountpoint = mountpoint }

    /// Runs `body` with a descriptor of the directory `location.directories` names (an `O_PATH`
    /// descriptor) and the entry's name; returns 0 or an errno. The mount root is opened anew for
    /// each call and every descriptor is closed before returning: a descriptor kept open would
    /// keep the mount busy, and an unmount would fail.
    private func inParent(of location: EchoLocation, _ body: (Int32, UnsafePointer<CChar>?) -> Int32) -> Int32 {
        let root = open(mountpoint, openPathOnly | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return errno }
        var directory = root
        defer { close(directory) }
        var status = stat()
        guard fstat(root, &status) == 0 else { return errno }
        let rootDevice = status.st_dev
        for component in location.directories {
            let next = withCName(component) {
                openat(directory, $0, openPathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            guard next >= 0 else { return errno }
            close(directory)
            directory = next
            guard fstat(directory, &status) == 0 else { return errno }
            guard status.st_dev == rootDevice else { return EXDEV }
        }
        guard let name = location.name else { return body(directory, nil) }
        return withCName(name) { body(directory, $0) }
    }

    /// Creates a regular file, a directory or a symlink (its target is data, stored as given).
    func create(_ location: EchoLocation, kind: NodeKind, target: [UInt8]?) -> Int32 {
        inParent(of: location) { directory, name in
            guard let name else { return EEXIST }
            let result: Int32
            switch kind {
            case .file: result = mknodat(directory, name, S_IFREG | 0o600, 0)
            case .directory: result = mkdirat(directory, name, 0o700)
            case .symlink:
                result = withCString(target ?? [0x2E]) { symlinkat($0, directory, name) }
            }
            return result == 0 ? 0 : errno
        }
    }

    /// Removes a file, symlink or (empty) directory.
    func remove(_ location: EchoLocation, isDirectory: Bool) -> Int32 {
        inParent(of: location) { directory, name in
            guard let name else { return EBUSY }
            return unlinkat(directory, name, isDirectory ? AT_REMOVEDIR : 0) == 0 ? 0 : errno
        }
    }

    /// Renames within the mount (no replacing: the destination was free in the tree).
    func move(_ source: EchoLocation, to destination: EchoLocation) -> Int32 {
        inParent(of: source) { sourceDirectory, sourceName in
            guard let sourceName else { return EBUSY }
            return inParent(of: destination) { destinationDirectory, destinationName in
                guard let destinationName else { return EBUSY }
                return renameat(sourceDirectory, sourceName, destinationDirectory, destinationName) == 0 ? 0 : errno
            }
        }
    }

    /// Opens a regular file for writing and truncates it to `size` by path (the kernel then sends
    /// the size alone: `ftruncate` would add its own mtime, which the writeback cache keeps).
    func touchContent(_ location: EchoLocation, size: Int64) -> Int32 {
        inParent(of: location) { directory, name in
            guard let name else { return EISDIR }
            let file = openat(directory, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard file >= 0 else { return errno }
            defer { close(file) }
            return Self.withDescriptorPath(file) { truncate($0, off_t(size)) } == 0 ? 0 : errno
        }
    }

    /// Sets a file's or directory's mode (never following a symlink), or a symlink's owner.
    func touchAttributes(_ location: EchoLocation, kind: NodeKind, mode: UInt32, uid: UInt32) -> Int32 {
        inParent(of: location) { directory, name in
            if kind == .symlink {
                guard let name else { return ELOOP }
                return fchownat(directory, name, uid, UInt32.max, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno
            }
            let target = name.map { openat(directory, $0, openPathOnly | O_NOFOLLOW | O_CLOEXEC) } ?? dup(directory)
            guard target >= 0 else { return errno }
            defer { close(target) }
            var status = stat()
            guard fstat(target, &status) == 0 else { return errno }
            guard status.st_mode & S_IFMT != S_IFLNK else { return ELOOP }
            return Self.withDescriptorPath(target) { chmod($0, mode_t(mode)) } == 0 ? 0 : errno
        }
    }

    /// `/proc/thread-self/fd/N`: the calling thread's own descriptor table (the echo thread has
    /// one of its own, so `/proc/self` would name another table).
    private static func withDescriptorPath(_ descriptor: Int32, _ body: (UnsafePointer<CChar>) -> Int32) -> Int32 {
        "/proc/thread-self/fd/\(descriptor)".withCString(body)
    }

    private func withCName<R>(_ name: FileName, _ body: (UnsafePointer<CChar>) -> R) -> R {
        withCString(name.bytes, body)
    }

    private func withCString<R>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        (bytes + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
