import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a local configuration file only if it is the machine owner's: a file that another user
/// could have written must never decide what runs (`MergeCommandTable`).
///
/// Trusted means all of:
/// - an absolute path, not inside `mountpoint` (neither as written nor after resolving symlinks):
///   a file in the synced folder is written by every token holder;
/// - the file is a regular file (not a symlink, FIFO or device), at most `limit` bytes, owned by
///   `owner` (the daemon's user) or root, and not writable by group or others;
/// - every directory from `/` down to it (symlinks resolved) is owned by `owner` or root and is
///   not writable by group or others, unless it is sticky (as `/tmp`): then no one else can
///   replace an entry of ours in it.
public enum TrustedConfigFile {
    public enum Outcome: Equatable, Sendable {
        /// No file at `path` (nothing is configured).
        case missing
        /// The file exists but is not trusted (or not readable): why, for the log.
        case untrusted(String)
        case trusted([UInt8])
    }

    public static func read(_ path: String, owner: uid_t, outside mountpoint: String?, limit: Int = 1 << 20) -> Outcome
    {
        guard path.hasPrefix("/") else { return .untrusted("\(path) is not an absolute path") }
        if let mountpoint, isInside(path, mountpoint) {
            return .untrusted("\(path) is inside the synced folder \(mountpoint)")
        }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return .missing }
            if code == ELOOP { return .untrusted("\(path) is a symbolic link") }
            return .untrusted("cannot open \(path): \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            return .untrusted("cannot stat \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return .untrusted("\(path) is not a regular file") }
        guard info.st_uid == owner || info.st_uid == 0 else {
            return .untrusted("\(path) is owned by uid \(info.st_uid), not by uid \(owner) or root")
        }
        guard info.st_mode & 0o022 == 0 else {
            return .untrusted(
                "\(path) is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8)); chmod go-w it)"
            )
        }
        guard info.st_size <= limit else { return .untrusted("\(path) is larger than \(limit) bytes") }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        guard let resolved = realpath(directory.isEmpty ? "/" : directory, nil) else {
            return .untrusted("cannot resolve the folder of \(path): \(String(cString: strerror(errno)))")
        }
        let real = String(cString: resolved)
        free(resolved)
        if let mountpoint, isInside(real + "/", mountpoint) {
            return .untrusted("\(path) is inside the synced folder \(mountpoint)")
        }
        if let problem = untrustedAncestor(real, owner: owner) { return .untrusted("\(path): \(problem)") }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while bytes.count <= limit {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return .untrusted("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { return .trusted(bytes) }
            bytes += buffer[..<count]
        }
        return .untrusted("\(path) is larger than \(limit) bytes")
    }

    /// The first directory of `directory` (absolute, symlinks resolved) and its ancestors that
    /// another user could write, described; nil when none.
    static func untrustedAncestor(_ directory: String, owner: uid_t) -> String? {
        var current = directory
        while true {
            var info = stat()
            guard lstat(current.isEmpty ? "/" : current, &info) == 0 else {
                return "cannot stat \(current): \(String(cString: strerror(errno)))"
            }
            if info.st_uid != owner && info.st_uid != 0 {
                return "the folder \(current.isEmpty ? "/" : current) is owned by uid \(info.st_uid)"
            }
            if info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0 {
                return "the folder \(current.isEmpty ? "/" : current) is writable by group or others"
            }
            guard let slash = current.lastIndex(of: "/"), !current.isEmpty else { return nil }
            current = String(current[..<slash])
        }
    }

    /// Whether `path` is `mountpoint` or below it (textually; both absolute).
    static func isInside(_ path: String, _ mountpoint: String) -> Bool {
        let root = mountpoint.hasSuffix("/") ? String(mountpoint.dropLast()) : mountpoint
        return path == root || path.hasPrefix(root + "/")
    }
}
