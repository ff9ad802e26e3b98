import Foundation
import Glibc
import TestSupport
import Testing

// Small syscall helpers for the mount suites. Everything here works on any directory; a failing
// call throws (or records an issue) with the call, the path and the errno *name*, so a report
// reads "rename(a, b): EPERM" rather than "error 1".

/// A failed system call.
struct PosixError: Error, CustomStringConvertible {
    let code: Int32
    let operation: String

    var description: String { "\(operation): \(errnoName(code)) (\(String(cString: strerror(code))))" }
}

/// Runs `body` (one system call) and throws `PosixError` with the current errno when it returns -1.
@discardableResult
func posix<T: BinaryInteger>(_ operation: @autoclosure () -> String, _ body: () -> T) throws -> T {
    errno = 0
    let result = body()
    if result == -1 { throw PosixError(code: errno, operation: operation()) }
    return result
}

/// Expects `body` (one system call) to fail with -1 and exactly `expected` as errno; records an
/// issue naming both errnos otherwise. Returns whether the expectation held.
@discardableResult
func expectErrno<T: BinaryInteger>(
    _ expected: Int32, _ operation: @autoclosure () -> String = "call",
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () -> T
) -> Bool {
    errno = 0
    let result = body()
    let code = errno
    if result != -1 {
        Issue.record(
            "\(operation()): expected \(errnoName(expected)), but it succeeded (returned \(result))",
            sourceLocation: sourceLocation)
        return false
    }
    if code != expected {
        Issue.record(
            "\(operation()): expected \(errnoName(expected)), got \(errnoName(code)) (\(String(cString: strerror(code))))",
            sourceLocation: sourceLocation)
        return false
    }
    return true
}

/// Expects `body` (one system call) to succeed (not return -1); records an issue with the errno
/// otherwise. Returns the result, or nil on failure.
@discardableResult
func expectSuccess<T: BinaryInteger>(
    _ operation: @autoclosure () -> String = "call", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () -> T
) -> T? {
    errno = 0
    let result = body()
    let code = errno
    if result == -1 {
        Issue.record(
            "\(operation()): expected success, got \(errnoName(code)) (\(String(cString: strerror(code))))",
            sourceLocation: sourceLocation)
        return nil
    }
    return result
}

/// The symbolic name of an errno value ("ENOENT"), or "errno N".
func errnoName(_ code: Int32) -> String {
    let names: [Int32: String] = [
        0: "no error (0)", EPERM: "EPERM", ENOENT: "ENOENT", ESRCH: "ESRCH", EINTR: "EINTR", EIO: "EIO",
        ENXIO: "ENXIO", E2BIG: "E2BIG", EBADF: "EBADF", ECHILD: "ECHILD", EAGAIN: "EAGAIN", ENOMEM: "ENOMEM",
        EACCES: "EACCES", EFAULT: "EFAULT", EBUSY: "EBUSY", EEXIST: "EEXIST", EXDEV: "EXDEV", ENODEV: "ENODEV",
        ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EINVAL: "EINVAL", ENFILE: "ENFILE", EMFILE: "EMFILE",
        ETXTBSY: "ETXTBSY", EFBIG: "EFBIG", ENOSPC: "ENOSPC", ESPIPE: "ESPIPE", EROFS: "EROFS", EMLINK: "EMLINK",
        EPIPE: "EPIPE", ERANGE: "ERANGE", ENAMETOOLONG: "ENAMETOOLONG", ENOSYS: "ENOSYS", ENOTEMPTY: "ENOTEMPTY",
        ELOOP: "ELOOP", ENODATA: "ENODATA", EOVERFLOW: "EOVERFLOW", ENOTSUP: "EOPNOTSUPP/ENOTSUP",
        ENOTCONN: "ENOTCONN", ESTALE: "ESTALE", EADDRINUSE: "EADDRINUSE", ENOTSOCK: "ENOTSOCK",
        ECONNREFUSED: "ECONNREFUSED", ETIMEDOUT: "ETIMEDOUT",
    ]
    return names[code] ?? "errno \(code)"
}

// MARK: - Linux constants and calls the Glibc module does not import

enum Linux {
    static let seekData: Int32 = 3
    static let seekHole: Int32 = 4
    static let utimeNow = 0x3fff_ffff
    static let utimeOmit = 0x3fff_fffe
    static let renameNoReplace: UInt32 = 1
    static let renameExchange: UInt32 = 2
    static let xattrCreate: Int32 = 1
    static let xattrReplace: Int32 = 2

    private typealias Renameat2 =
        @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32)
        -> Int32
    private typealias Fallocate = @convention(c) (Int32, Int32, off_t, off_t) -> Int32
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private typealias SetXattr =
        @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32)
        -> Int32
    private typealias GetXattr =
        @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int)
        -> Int
    private typealias ListXattr = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int) -> Int
    private typealias RemoveXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32

    private static func symbol<T>(_ name: String, _ type: T.Type) -> T {
        guard let handle = dlopen(nil, RTLD_NOW), let pointer = dlsym(handle, name) else {
            fatalError("the C library has no \(name)")
        }
        return unsafeBitCast(pointer, to: type)
    }

    nonisolated(unsafe) private static let renameat2Function = symbol("renameat2", Renameat2.self)
    nonisolated(unsafe) private static let fallocateFunction = symbol("fallocate", Fallocate.self)
    nonisolated(unsafe) private static let pipe2Function = symbol("pipe2", Pipe2.self)
    nonisolated(unsafe) private static let setxattrFunction = symbol("setxattr", SetXattr.self)
    nonisolated(unsafe) private static let getxattrFunction = symbol("getxattr", GetXattr.self)
    nonisolated(unsafe) private static let listxattrFunction = symbol("listxattr", ListXattr.self)
    nonisolated(unsafe) private static let removexattrFunction = symbol("removexattr", RemoveXattr.self)

    /// renameat2(AT_FDCWD, from, AT_FDCWD, to, flags).
    static func renameat2(_ from: String, _ to: String, _ flags: UInt32) -> Int32 {
        renameat2Function(AT_FDCWD, from, AT_FDCWD, to, flags)
    }

    static func fallocate(_ fd: Int32, _ mode: Int32, _ offset: off_t, _ length: off_t) -> Int32 {
        fallocateFunction(fd, mode, offset, length)
    }

    static func pipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32 { pipe2Function(fds, flags) }

    static func setxattr(_ path: String, _ name: String, _ value: [UInt8], _ flags: Int32) -> Int32 {
        value.withUnsafeBytes { setxattrFunction(path, name, $0.baseAddress, value.count, flags) }
    }

    /// getxattr into a buffer of `size` bytes (0 asks for the size); returns the length or -1.
    static func getxattr(_ path: String, _ name: String, size: Int) -> (Int, [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: max(size, 1))
        let length = buffer.withUnsafeMutableBytes {
            getxattrFunction(path, name, size == 0 ? nil : $0.baseAddress, size)
        }
        return (length, length > 0 ? Array(buffer[0..<min(length, size)]) : [])
    }

    static func listxattr(_ path: String, size: Int) -> (Int, [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: max(size, 1))
        let length = buffer.withUnsafeMutableBytes {
            listxattrFunction(path, size == 0 ? nil : $0.baseAddress!.assumingMemoryBound(to: CChar.self), size)
        }
        return (length, length > 0 ? Array(buffer[0..<min(length, size)]) : [])
    }

    static func removexattr(_ path: String, _ name: String) -> Int32 { removexattrFunction(path, name) }
}

// MARK: - Files

/// Writes all of `bytes` to `fd` (looping over short writes).
func writeAll(_ fd: Int32, _ bytes: [UInt8], what: String = "write") throws {
    var offset = 0
    while offset < bytes.count {
        let written = try bytes.withUnsafeBytes { buffer in
            try posix(what) { write(fd, buffer.baseAddress! + offset, bytes.count - offset) }
        }
        offset += written
    }
}

/// Reads `fd` from its current offset to end-of-file.
func readAll(_ fd: Int32, what: String = "read") throws -> [UInt8] {
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = try chunk.withUnsafeMutableBytes { buffer in
            try posix(what) { read(fd, buffer.baseAddress!, buffer.count) }
        }
        if count == 0 { return result }
        result.append(contentsOf: chunk[0..<count])
    }
}

/// pread of up to `count` bytes at `offset`.
func preadBytes(_ fd: Int32, count: Int, offset: off_t, what: String = "pread") throws -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: count)
    let got = try buffer.withUnsafeMutableBytes { raw in
        try posix(what) { pread(fd, raw.baseAddress!, count, offset) }
    }
    return Array(buffer[0..<got])
}

/// pwrite of all of `bytes` at `offset`.
func pwriteBytes(_ fd: Int32, _ bytes: [UInt8], offset: off_t, what: String = "pwrite") throws {
    let written = try bytes.withUnsafeBytes { raw in
        try posix(what) { pwrite(fd, raw.baseAddress!, bytes.count, offset) }
    }
    if written != bytes.count {
        throw PosixError(code: EIO, operation: "\(what): short write \(written)/\(bytes.count)")
    }
}

/// Opens `path`; the caller closes.
func openFile(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) throws -> Int32 {
    try posix("open(\(path))") { open(path, flags | O_CLOEXEC, mode) }
}

/// Opens `path`, runs `body` with the descriptor and closes it (close errors are thrown too).
@discardableResult
func withFile<R>(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644, _ body: (Int32) throws -> R) throws -> R {
    let fd = try openFile(path, flags, mode)
    var closed = false
    defer { if !closed { close(fd) } }
    let result = try body(fd)
    closed = true
    try posix("close(\(path))") { close(fd) }
    return result
}

/// Creates or replaces `path` with `bytes`.
func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws {
    try withFile(path, O_WRONLY | O_CREAT | O_TRUNC, mode) { try writeAll($0, bytes, what: "write(\(path))") }
}

func writeFile(_ path: String, _ text: String, mode: mode_t = 0o644) throws {
    try writeFile(path, Array(text.utf8), mode: mode)
}

/// Appends `bytes` to `path` through O_APPEND.
func appendFile(_ path: String, _ bytes: [UInt8]) throws {
    try withFile(path, O_WRONLY | O_APPEND) { try writeAll($0, bytes, what: "write(\(path), O_APPEND)") }
}

func readFile(_ path: String) throws -> [UInt8] {
    try withFile(path, O_RDONLY) { try readAll($0, what: "read(\(path))") }
}

func readText(_ path: String) throws -> String {
    String(decoding: try readFile(path), as: UTF8.self)
}

// MARK: - Metadata

func lstatPath(_ path: String) throws -> stat {
    var info = stat()
    try posix("lstat(\(path))") { lstat(path, &info) }
    return info
}

func statPath(_ path: String) throws -> stat {
    var info = stat()
    try posix("stat(\(path))") { stat(path, &info) }
    return info
}

func fstatFD(_ fd: Int32) throws -> stat {
    var info = stat()
    try posix("fstat(\(fd))") { fstat(fd, &info) }
    return info
}

/// Whether `path` exists (lstat succeeds: a dangling symlink exists).
func pathExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}

func fileType(_ info: stat) -> mode_t { info.st_mode & S_IFMT }
func isDirectory(_ info: stat) -> Bool { fileType(info) == S_IFDIR }
func isRegular(_ info: stat) -> Bool { fileType(info) == S_IFREG }
func isSymlink(_ info: stat) -> Bool { fileType(info) == S_IFLNK }
func permissions(_ info: stat) -> mode_t { info.st_mode & 0o7777 }

func makeDirectory(_ path: String, mode: mode_t = 0o755) throws {
    try posix("mkdir(\(path))") { mkdir(path, mode) }
}

func makeSymlink(target: String, at path: String) throws {
    try posix("symlink(\(target), \(path))") { symlink(target, path) }
}

func readLink(_ path: String) throws -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = try posix("readlink(\(path))") { readlink(path, &buffer, buffer.count - 1) }
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The names in a directory (without "." and ".."), in readdir order.
func listDirectory(_ path: String) throws -> [String] {
    guard let directory = opendir(path) else { throw PosixError(code: errno, operation: "opendir(\(path))") }
    defer { closedir(directory) }
    var names: [String] = []
    while true {
        errno = 0
        guard let entry = readdir(directory) else {
            if errno != 0 { throw PosixError(code: errno, operation: "readdir(\(path))") }
            return names
        }
        let name = entry.entryName
        if name != "." && name != ".." { names.append(name) }
    }
}

// MARK: - Extended attributes

func setXattr(_ path: String, _ name: String, _ value: [UInt8], flags: Int32 = 0) throws {
    try posix("setxattr(\(path), \(name))") { Linux.setxattr(path, name, value, flags) }
}

func getXattr(_ path: String, _ name: String) throws -> [UInt8] {
    let size = try posix("getxattr(\(path), \(name), size query)") { Linux.getxattr(path, name, size: 0).0 }
    let (length, value) = Linux.getxattr(path, name, size: size + 16)
    if length == -1 { throw PosixError(code: errno, operation: "getxattr(\(path), \(name))") }
    return value
}

/// The attribute names of `path`, sorted.
func listXattrs(_ path: String) throws -> [String] {
    let size = try posix("listxattr(\(path), size query)") { Linux.listxattr(path, size: 0).0 }
    let (length, bytes) = Linux.listxattr(path, size: size + 256)
    if length == -1 { throw PosixError(code: errno, operation: "listxattr(\(path))") }
    return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.sorted()
}

func removeXattr(_ path: String, _ name: String) throws {
    try posix("removexattr(\(path), \(name))") { Linux.removexattr(path, name) }
}

// MARK: - Data

/// Deterministic pseudo-random bytes (`SeededGenerator`), different for each seed.
func patternBytes(count: Int, seed: UInt64 = 1) -> [UInt8] { SeededGenerator.bytes(count: count, seed: seed) }

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A timespec for utimensat.
func timespecOf(seconds: Int, nanoseconds: Int) -> timespec {
    timespec(tv_sec: seconds, tv_nsec: nanoseconds)
}

// MARK: - Directory entries

extension UnsafeMutablePointer where Pointee == dirent {
    /// The entry's name, read in place: copying `pointee.d_name` (a 256-byte tuple) can read past
    /// the end of glibc's buffer, whose last entry is only `d_reclen` long.
    var entryName: String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return String(cString: UnsafeRawPointer(self).advanced(by: offset).assumingMemoryBound(to: CChar.self))
    }
}
