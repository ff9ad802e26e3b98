import Foundation
import Glibc
import TestSupport

/// Thin syscall helpers shared by the model, crash and programs tests.
enum ModelSys {
    static let errnoNames: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EIO: "EIO", EBADF: "EBADF", EAGAIN: "EAGAIN",
        ENOMEM: "ENOMEM", EACCES: "EACCES", EFAULT: "EFAULT", EBUSY: "EBUSY", EEXIST: "EEXIST",
        EXDEV: "EXDEV", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EINVAL: "EINVAL",
        ENFILE: "ENFILE", EMFILE: "EMFILE", ETXTBSY: "ETXTBSY", EFBIG: "EFBIG", ENOSPC: "ENOSPC",
        ESPIPE: "ESPIPE", EROFS: "EROFS", EMLINK: "EMLINK", ERANGE: "ERANGE", ENAMETOOLONG: "ENAMETOOLONG",
        ENOSYS: "ENOSYS", ENOTEMPTY: "ENOTEMPTY", ELOOP: "ELOOP", ENODATA: "ENODATA",
        EOPNOTSUPP: "EOPNOTSUPP", ENOTCONN: "ENOTCONN", ESTALE: "ESTALE", E2BIG: "E2BIG",
        EDQUOT: "EDQUOT", ECONNABORTED: "ECONNABORTED", EINTR: "EINTR", ENXIO: "ENXIO",
    ]

    static func errnoName(_ e: Int32) -> String { errnoNames[e] ?? "errno(\(e))" }

    /// "ok" for rc >= 0, else the errno name.
    static func outcome(_ rc: Int32) -> String { rc >= 0 ? "ok" : errnoName(errno) }

    static func join(_ root: String, _ rel: String) -> String { rel.isEmpty ? root : root + "/" + rel }

    static func parent(_ rel: String) -> String {
        guard let i = rel.lastIndex(of: "/") else { return "" }
        return String(rel[..<i])
    }

    static func lstatOrNil(_ path: String) -> stat? {
        var st = stat()
        return lstat(path, &st) == 0 ? st : nil
    }

    static func kindChar(_ mode: mode_t) -> Character {
        switch mode & S_IFMT {
        case S_IFREG: return "f"
        case S_IFDIR: return "d"
        case S_IFLNK: return "l"
        default: return "o"
        }
    }

    static func readLink(_ path: String) -> String? {
        var buf = [CChar](repeating: 0, count: 8192)
        let n = readlink(path, &buf, buf.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads a whole file (no symlink following at the last component). Returns bytes or errno.
    static func readAll(_ path: String) -> Result<[UInt8], ModelErrno> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return .failure(ModelErrno(errno)) }
        defer { close(fd) }
        return readAll(fd: fd)
    }

    static func readAll(fd: Int32) -> Result<[UInt8], ModelErrno> {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = read(fd, &buf, buf.count)
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(ModelErrno(errno))
            }
            if n == 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return .success(out)
    }

    /// Writes all bytes with pwrite at offset (or write for offset nil). Returns bytes written or errno.
    static func writeAll(fd: Int32, _ bytes: [UInt8], offset: Int? = nil) -> Result<Int, ModelErrno> {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { p -> Int in
                let base = p.baseAddress! + done
                if let off = offset { return pwrite(fd, base, bytes.count - done, off_t(off + done)) }
                return write(fd, base, bytes.count - done)
            }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(ModelErrno(errno))
            }
            if n == 0 { break }
            done += n
        }
        return .success(done)
    }

    /// user.* extended attributes of path (not following a final symlink), excluding the
    /// daemon's own virtual `user.syncfs.*` attributes. Values hex-encoded.
    static func userXattrs(_ path: String) -> Result<[String: String], ModelErrno> {
        var size = ModelConst.llistxattr(path, nil, 0)
        guard size >= 0 else { return .failure(ModelErrno(errno)) }
        var names = [CChar](repeating: 0, count: max(size, 1) + 1024)
        size = ModelConst.llistxattr(path, &names, names.count)
        guard size >= 0 else { return .failure(ModelErrno(errno)) }
        var result: [String: String] = [:]
        let list = names[0..<size].split(separator: 0).map {
            String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        for name in list where name.hasPrefix("user.") && !name.hasPrefix("user.syncfs.") {
            var value = [UInt8](repeating: 0, count: 65536)
            let n = ModelConst.lgetxattr(path, name, &value, value.count)
            if n < 0 {
                result[name] = "<\(errnoName(errno))>"
            } else {
                result[name] = hex(Array(value[0..<n]))
            }
        }
        return .success(result)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var s = ""
        s.reserveCapacity(bytes.count * 2)
        for b in bytes {
            s.append(digits[Int(b >> 4)])
            s.append(digits[Int(b & 15)])
        }
        return s
    }

    /// Lists a directory (names other than . and ..), sorted, with readdir's d_type.
    static func listDir(_ path: String) -> Result<[(name: String, dtype: UInt8)], ModelErrno> {
        guard let dir = opendir(path) else { return .failure(ModelErrno(errno)) }
        defer { closedir(dir) }
        var out: [(name: String, dtype: UInt8)] = []
        while true {
            errno = 0
            guard let ent = readdir(dir) else {
                if errno != 0 { return .failure(ModelErrno(errno)) }
                break
            }
            let name = ent.entryName
            if name == "." || name == ".." { continue }
            out.append((name, ent.pointee.d_type))
        }
        out.sort { $0.name < $1.name }
        return .success(out)
    }

    /// Mount points (decoded) from /proc/self/mountinfo, in order.
    static func mountPoints() -> [(point: String, fstype: String)] {
        guard let s = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
        var out: [(String, String)] = []
        for line in s.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard fields.count > 5, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            out.append((unescapeMount(fields[4]), fields[dash + 1]))
        }
        return out
    }

    static func mountCount(at path: String) -> Int { mountPoints().filter { $0.point == path }.count }

    static func unescapeMount(_ s: String) -> String {
        var bytes: [UInt8] = []
        let u = Array(s.utf8)
        var i = 0
        while i < u.count {
            if u[i] == UInt8(ascii: "\\"), i + 3 < u.count,
                let v = UInt8(String(decoding: u[(i + 1)...(i + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(v)
                i += 4
            } else {
                bytes.append(u[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Makes a fresh directory outside any folder under test.
    static func makeTempDir(_ prefix: String) -> String {
        (try? makeTemporaryDirectory(prefix)) ?? "/tmp/\(prefix)-failed-\(getpid())"
    }

    static func removeTree(_ path: String) {
        _ = ModelProcess.run(["/bin/rm", "-rf", path])
    }
}

struct ModelErrno: Error, Equatable, CustomStringConvertible {
    let code: Int32
    init(_ code: Int32) { self.code = code }
    var description: String { ModelSys.errnoName(code) }
}
