import Glibc

/// "Private by default" (doc/FORMATS.md, "Permissions"): what SyncFS keeps on disk — containers,
/// state directories, caches, databases, logs, control sockets — is readable by its owner only.
///
/// Directories are created 0700 and files 0600 whatever the umask (the umask can only remove
/// bits, so these modes come out exact under umask 000 and 022). An existing directory or file of
/// ours that a group or other users can reach is **tightened** (`chmod go-rwx`) when this process
/// owns it; one owned by another user is **refused** with a message saying how to fix it, unless
/// `Ownership.anyOwnerIfPrivate` allows a private one (root mounting a user's own container).
package enum PrivateFiles {
    /// Which owners an existing path may have.
    package enum Ownership: Sendable {
        /// Only this process's effective user (state directories, the runtime directory).
        case mine
        /// Any owner, as long as group and others have no access to it (a container directory).
        case anyOwnerIfPrivate
    }

    /// Why a path cannot be used privately; `description` says how to fix it.
    package struct Refusal: Error, CustomStringConvertible, Sendable {
        package let description: String
        package init(_ description: String) { self.description = description }
    }

    /// Group and other permission bits.
    package static let groupOrOther: mode_t = 0o077

    /// Makes `path` a private directory: creates it (and missing parents) 0700, or checks and
    /// tightens an existing one. `followSymlink` false refuses a symlink at `path` itself (the
    /// runtime directory, which sits in shared places such as /tmp).
    package static func directory(
        _ path: String, ownership: Ownership = .mine, followSymlink: Bool = true
    ) throws(Refusal) {
        try createMissing(path)
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followSymlink ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP || code == ENOTDIR {
                throw Refusal("\(path) is not a directory\(followSymlink ? "" : " (or is a symlink)"); remove it")
            }
            throw Refusal("cannot open the directory \(path): \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        try makePrivate(fd, path: path, mode: 0o700, ownership: ownership)
    }

    /// Tightens the existing file at `path` (a database, its -wal/-shm, a log) if group or others
    /// can reach it; a missing file is fine.
    package static func tightenFile(_ path: String, ownership: Ownership = .mine) throws(Refusal) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return }
            // A symlink or something unreadable: leave it to the caller's open to report.
            return
        }
        defer { close(fd) }
        try makePrivate(fd, path: path, mode: 0o600, ownership: ownership)
    }

    /// Checks an open directory or file and removes group/other bits if it is ours.
    package static func makePrivate(_ fd: Int32, path: String, mode: mode_t, ownership: Ownership) throws(Refusal) {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw Refusal("cannot inspect \(path): \(String(cString: strerror(errno)))")
        }
        let me = geteuid()
        if info.st_uid != me {
            let loose = info.st_mode & groupOrOther != 0
            if ownership == .mine || loose {
                throw Refusal(
                    "\(path) belongs to uid \(info.st_uid), not to uid \(me) who runs syncfs-mount"
                        + (loose ? ", and other users can reach it" : "")
                        + "; remove it or give it to uid \(me) with mode \(octal(mode)) "
                        + "(chown \(me) \(path); chmod \(octal(mode)) \(path))")
            }
            return
        }
        guard info.st_mode & groupOrOther != 0 else { return }
        guard fchmod(fd, info.st_mode & 0o700) == 0 else {
            throw Refusal(
                "\(path) can be reached by other users and cannot be made private: "
                    + "\(String(cString: strerror(errno))); run chmod \(octal(mode)) \(path)")
        }
    }

    /// Creates the file at `path` with `bytes`, mode 0600, failing if it exists (`O_EXCL`).
    /// Returns the errno of a failure.
    package static func createFile(_ path: String, _ bytes: [UInt8]) -> Int32? {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return errno }
        var failure = LocalFileIO.writeAll(fd, bytes)
        if failure == nil, fsync(fd) != 0 { failure = errno }
        if close(fd) != 0, failure == nil { failure = errno }
        return failure
    }

    /// Creates the missing directories of `path`, each 0700 (parents made here are ours too).
    private static func createMissing(_ path: String) throws(Refusal) {
        var info = stat()
        if lstat(path, &info) == 0 { return }
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        var current = path.hasPrefix("/") ? "" : "."
        for component in components {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw Refusal("cannot create the directory \(current): \(String(cString: strerror(errno)))")
            }
        }
    }

    private static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}
