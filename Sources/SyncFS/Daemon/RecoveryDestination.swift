import Glibc
import SyncBackend

/// The directory `recover` makes its folder in (`recover --into DIR`), held by a descriptor. It
/// must be such that no other user can rename or replace what is made there, or they could move
/// the new folder aside and plant a symlink under the printed name: DIR and every directory
/// above it belong to the caller or root, and none is writable by group or others unless it is
/// sticky (as /tmp, where only an entry's owner may rename it). The rule of sshd's StrictModes,
/// checked on the opened directory and its parents as the kernel walks `..`, not on the path
/// as typed; `path` is the canonical path of that directory.
struct RecoveryDestination {
    let descriptor: Int32
    let path: String

    static func open(_ given: String) throws(MountError) -> RecoveryDestination {
        let fd = Glibc.open(given, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw MountError(.cannotCreate, "cannot use \(given): \(String(cString: strerror(errno)))")
        }
        let path = canonicalPath(of: fd) ?? given
        do throws(MountError) {
            try checkChain(from: fd, path: path)
        } catch {
            close(fd)
            throw error
        }
        return RecoveryDestination(descriptor: fd, path: path)
    }

    /// Checks `fd` and each parent up to the root; `path` names them for the messages.
    private static func checkChain(from fd: Int32, path: String) throws(MountError) {
        var current = dup(fd)
        var name = path
        defer { close(current) }
        while true {
            var info = stat()
            guard current >= 0, fstat(current, &info) == 0 else {
                throw MountError(.cannotCreate, "cannot check \(name): \(String(cString: strerror(errno)))")
            }
            if let problem = problem(info, name: name) {
                throw MountError(
                    .cannotCreate,
                    "cannot recover into \(path): \(problem), so another user could rename what recover makes "
                        + "there and put a symlink in its place; choose a folder only you can write (or a sticky "
                        + "one, as /tmp); nothing was moved")
            }
            let parent = openat(current, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            var above = stat()
            guard parent >= 0, fstat(parent, &above) == 0 else {
                if parent >= 0 { close(parent) }
                throw MountError(
                    .cannotCreate, "cannot check the folder above \(name): \(String(cString: strerror(errno)))")
            }
            if above.st_dev == info.st_dev && above.st_ino == info.st_ino {
                close(parent)
                return
            }
            close(current)
            current = parent
            name = parentPath(of: name)
        }
    }

    /// Why another user could change the entries of a directory with `info`, or nil.
    private static func problem(_ info: stat, name: String) -> String? {
        if info.st_uid != geteuid() && info.st_uid != 0 {
            return "\(name) belongs to uid \(info.st_uid)"
        }
        if info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0 {
            return "\(name) is writable by others (mode \(String(info.st_mode & 0o7777, radix: 8)), not sticky)"
        }
        return nil
    }

    /// The path the kernel knows `fd` by (`/proc/self/fd`), or nil.
    private static func canonicalPath(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix("/") ? path : nil
    }

    private static func parentPath(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
