import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A private temporary directory for one merge command: the three versions (`%O`, `%A`, `%B`)
/// and the command's working directory, usable by the user the command runs as and by nobody
/// else.
///
/// Made with mkdtemp (mode 0700) below `parent`, then given to the command's user; the files are
/// created inside with `O_EXCL | O_NOFOLLOW`, mode 0600, and given to that user too. The command's
/// user owns the directory, so it may rename, replace or link anything in it: the daemon
/// therefore reads the result only through the directory descriptor it opened at creation, with
/// `O_NOFOLLOW`, and accepts only a regular file with one link owned by the command's user (a
/// symlink or a hard link to a file the command's user cannot read never becomes the merge
/// result), and removes the tree through descriptors as well.
public final class MergeWorkspace {
    public struct Failure: Error, Equatable {
        public var message: String
    }

    /// The directory's path (the command's working directory).
    public let path: String
    private let parentFD: Int32
    private let directoryFD: Int32
    private let name: String
    private let owner: (uid: uid_t, gid: gid_t)?

    /// `parent` must be a directory the command's user can traverse (for a switch of user:
    /// `/tmp`, not the 0700 state directory). `owner`: the user and group to give the directory
    /// and files to (nil: the daemon's own user).
    public init(parent: String, owner: (uid: uid_t, gid: gid_t)?) throws(Failure) {
        var template = Array((parent + "/syncfs-merge-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw Self.failure("cannot make a directory in \(parent)") }
        path = String(cString: made)
        name = String(path[path.index(after: path.lastIndex(of: "/")!)...])
        parentFD = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        directoryFD = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        self.owner = owner
        guard parentFD >= 0, directoryFD >= 0 else {
            let error = Self.failure("cannot open \(path)")
            rmdir(path)
            throw error
        }
        if let owner, fchown(directoryFD, owner.uid, owner.gid) != 0 {
            let error = Self.failure("cannot give \(path) to uid \(owner.uid)")
            remove()
            throw error
        }
    }

    deinit {
        close(directoryFD)
        close(parentFD)
    }

    /// Writes `bytes` to a new file `name` in the directory (0600, the command's user's) and
    /// returns its path.
    public func write(_ fileName: String, _ bytes: [UInt8]) throws(Failure) -> String {
        let fd = openat(directoryFD, fileName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("cannot create \(fileName) in \(path)") }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Self.failure("cannot write \(fileName) in \(path)") }
            written += count
        }
        if let owner, fchown(fd, owner.uid, owner.gid) != 0 {
            throw Self.failure("cannot give \(fileName) to uid \(owner.uid)")
        }
        return path + "/" + fileName
    }

    /// The content of `fileName` as the command left it, at most `limit` bytes: only a regular
    /// file with one link, owned by the command's user (never followed through a symlink).
    public func read(_ fileName: String, limit: Int) throws(Failure) -> [UInt8] {
        let fd = openat(directoryFD, fileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Self.failure("the merge command left no result") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1,
            info.st_uid == owner?.uid ?? geteuid()
        else {
            throw Failure(message: "the merge command's result is not a regular file of its own (left untouched)")
        }
        guard info.st_size <= limit else { throw Failure(message: "the merge command's result is too large") }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw Self.failure("cannot read the merge command's result") }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
            guard bytes.count <= limit else { throw Failure(message: "the merge command's result is too large") }
        }
    }

    /// Removes the directory and everything the command left in it, through descriptors (a
    /// symlink planted inside is removed, never followed).
    public func remove() {
        Self.empty(directoryFD, depth: 0)
        // A directory the command renamed away is left where it put it; a symlink put in its place
        // is not followed (AT_REMOVEDIR fails on it).
        _ = unlinkat(parentFD, name, AT_REMOVEDIR)
    }

    private static func empty(_ fd: Int32, depth: Int) {
        guard depth < 32, let stream = fdopendir(dup(fd)) else { return }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            // Read in place: the last record of glibc's buffer may be shorter than a whole `dirent`.
            let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            let name = String(cString: UnsafeRawPointer(entry).advanced(by: offset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        for name in names where unlinkat(fd, name, 0) != 0 {
            let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else { continue }
            empty(child, depth: depth + 1)
            close(child)
            _ = unlinkat(fd, name, AT_REMOVEDIR)
        }
    }

    private static func failure(_ message: String) -> Failure {
        Failure(message: "\(message): \(String(cString: strerror(errno)))")
    }
}
