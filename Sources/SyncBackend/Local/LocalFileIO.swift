import Dispatch
import Glibc

/// POSIX file helpers of the local container (the sync engine uses the read and write ones too),
/// and how their failures map to protocol errors.
package enum LocalFileIO {
    /// Runs blocking work (SQLite with its busy timeout, fsync) on a Dispatch thread, keeping the
    /// few threads of Swift's cooperative pool free, and returns its result to the caller.
    static func offload<T: Sendable>(_ work: @escaping @Sendable () throws(ContainerProtocolError) -> T)
        async throws(ContainerProtocolError) -> T
    {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<T, ContainerProtocolError>, Never>) in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(ContainerProtocolError) -> T in try work() })
            }
        }
        return try result.get()
    }

    /// A failed system call as a protocol error: a vanished path (an unplugged disk) is
    /// `unavailable`; anything else (ENOSPC, EIO, EROFS …) is `storageFailure`.
    static func failure(_ what: String, errno code: Int32) -> ContainerProtocolError {
        switch code {
        case ENOENT, ENOTDIR, ENODEV, ENXIO, ESTALE, ENOTCONN:
            return .unavailable("\(what): \(errorText(code))")
        default:
            return .storageFailure("\(what): \(errorText(code))")
        }
    }

    package static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Writes all of `bytes` at the file's current offset, retrying short writes and EINTR.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    /// Reads the whole file at `path`, or says which `errno` stopped it.
    package static func readAll(_ path: String) -> Result<[UInt8], Errno> {
        readAll(at: AT_FDCWD, path)
    }

    /// Reads the whole file at `path` below the directory descriptor `directory` (its size's
    /// worth; a file that says it has none, as those of `/proc`, to its end), or says which
    /// `errno` stopped it.
    package static func readAll(at directory: Int32, _ path: String) -> Result<[UInt8], Errno> {
        let fd = openat(directory, path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Errno(errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(Errno(errno)) }
        let sized = info.st_size > 0
        var bytes = [UInt8](repeating: 0, count: sized ? Int(info.st_size) : 4096)
        var offset = 0
        while offset < bytes.count || !sized {
            if offset == bytes.count { bytes += [UInt8](repeating: 0, count: bytes.count) }
            let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(Errno(errno))
            }
            if count == 0 { break }
            offset += count
        }
        return .success(Array(bytes.prefix(offset)))
    }

    /// Makes a directory's entries (a rename into it, a new subdirectory) durable.
    package static func syncDirectory(_ path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        return fsync(fd) == 0 ? nil : errno
    }

    /// An `errno` value carried in a `Result`.
    package struct Errno: Error {
        package let code: Int32
        init(_ code: Int32) { self.code = code }
    }
}

extension LocalFileIO {
    /// The first `count` bytes of the file at `path` (fewer if it is shorter).
    static func readPrefix(_ path: String, count: Int) -> Result<[UInt8], Errno> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Errno(errno)) }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard read >= 0 else { return .failure(Errno(errno)) }
        return .success(Array(bytes.prefix(read)))
    }
}

extension UnsafeMutablePointer where Pointee == dirent {
    /// The entry's name, read in place (as `SyncFS`'s `entryName`): glibc packs entries by
    /// `d_reclen`, so the last one in its buffer may be shorter than `MemoryLayout<dirent>.size`,
    /// and copying `pointee.d_name` (a 256-byte tuple) can read past the buffer and fault.
    var localEntryName: String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return String(cString: UnsafeRawPointer(self).advanced(by: offset).assumingMemoryBound(to: CChar.self))
    }
}
