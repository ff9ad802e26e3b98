import Foundation
import Glibc
import SyncBackend

/// The folder `LostStateRecovery` fills: made new (never an existing one, never through a
/// symlink) and private (0700) below the descriptor of a destination no other user can change
/// (`RecoveryDestination`), and written below its own descriptor only (`*at` calls,
/// `O_NOFOLLOW`, `O_EXCL`), so another local user cannot redirect what is recovered, nor what
/// the printed path leads to.
struct RecoveredFolder {
    let path: String
    let descriptor: Int32

    /// `DESTINATION/SyncFS recovered YYYY-MM-DD HHMMSS` (UTC; ` (2)`, … if taken).
    static func make(in target: RecoveryDestination, now: Date) throws(MountError) -> RecoveredFolder {
        let parent = target.descriptor
        let destination = target.path
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HHmmss"
        let base = "SyncFS recovered \(formatter.string(from: now))"
        for attempt in 1...100 {
            let name = attempt == 1 ? base : "\(base) (\(attempt))"
            if mkdirat(parent, name, 0o700) != 0 {
                if errno == EEXIST { continue }
                throw MountError(
                    .cannotCreate, "cannot create a folder in \(destination): \(String(cString: strerror(errno)))")
            }
            let fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                throw MountError(
                    .cannotCreate, "cannot open \(destination)/\(name): \(String(cString: strerror(errno)))")
            }
            // Another user able to write in DIR could have swapped a directory of theirs in
            // between mkdirat and openat: the folder must be ours.
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_uid == geteuid() else {
                close(fd)
                throw MountError(.cannotCreate, "\(destination)/\(name) was replaced while it was made; not used")
            }
            // mkdirat applied the umask: the folder is private whatever it is.
            fchmod(fd, 0o700)
            _ = fsync(parent)
            let path = destination.hasSuffix("/") ? destination + name : destination + "/" + name
            return RecoveredFolder(path: path, descriptor: fd)
        }
        throw MountError(.cannotCreate, "cannot create a folder in \(destination): too many recovered folders")
    }

    /// Moves the file at `source` into the folder as `name` (renamed when on the same file
    /// system; otherwise copied, synced, and only then removed), with modification time `mtime`.
    func take(_ source: String, as name: String, mtime: timespec) throws(MountError) {
        if renameat(AT_FDCWD, source, descriptor, name) == 0 {
            _ = fsync(descriptor)
            return
        }
        guard errno == EXDEV else {
            throw MountError(
                .cannotCreate, "cannot move \(source) to \(path)/\(name): \(String(cString: strerror(errno)))")
        }
        try copy(source, as: name, mtime: mtime)
        unlink(source)
    }

    private func copy(_ source: String, as name: String, mtime: timespec) throws(MountError) {
        let input = Glibc.open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard input >= 0 else {
            throw MountError(.failed, "cannot read \(source): \(String(cString: strerror(errno)))")
        }
        defer { close(input) }
        let output = openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else {
            throw MountError(.cannotCreate, "cannot create \(path)/\(name): \(String(cString: strerror(errno)))")
        }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw MountError(.failed, "cannot read \(source): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            var done = 0
            while done < count {
                let written = buffer.withUnsafeBytes { write(output, $0.baseAddress! + done, count - done) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else {
                    throw MountError(.cannotCreate, "cannot write \(path)/\(name): \(String(cString: strerror(errno)))")
                }
                done += written
            }
        }
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2), mtime]  // UTIME_OMIT for atime
        _ = futimens(output, &times)
        guard fsync(output) == 0 else {
            throw MountError(.cannotCreate, "cannot write \(path)/\(name): \(String(cString: strerror(errno)))")
        }
        _ = fsync(descriptor)
    }

    /// `RECOVERED.txt`: what the folder is and one line per file (name, bytes, file ID).
    func writeIndex(_ files: [LostStateRecovery.Recovered], statePath: String, now: Date) throws(MountError) {
        var text = """
            These files were recovered by `syncfs-mount recover` from the cache of the SyncFS state
            directory \(statePath), whose database (state.db) was missing or empty.
            The database held the files' names; without it they are named by their file ID.
            They are every piece of content the cache held: edits and new files not yet uploaded,
            and copies of files that were already synced. Compare them with the mounted folder,
            keep what is missing there, then delete this folder. "last path in the log" is the
            last path the daemon's log (syncfs.log) gave the file, when it named it at all (a
            failed upload, a download, lost or damaged content): a hint, possibly out of date.

            name\tbytes\tlast path in the log\n
            """
        for file in files { text += "\(file.name)\t\(file.bytes)\t\(file.lastLoggedPath ?? "")\n" }
        let fd = openat(descriptor, "RECOVERED.txt", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw MountError(.cannotCreate, "cannot create \(path)/RECOVERED.txt: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else {
            throw MountError(.cannotCreate, "cannot write \(path)/RECOVERED.txt: \(String(cString: strerror(errno)))")
        }
    }
}
