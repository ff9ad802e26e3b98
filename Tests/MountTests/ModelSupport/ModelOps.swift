import Foundation
import Glibc
import TestSupport

/// Constants the Glibc module does not import.
enum ModelConst {
    static let utimeNow = 0x3FFF_FFFF
    static let utimeOmit = 0x3FFF_FFFE
    static let xattrCreate: Int32 = 1
    static let xattrReplace: Int32 = 2
    static let renameNoReplace: UInt32 = 1

    typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
    typealias SetXattr =
        @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
    typealias GetXattr =
        @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    typealias ListXattr = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int) -> Int
    typealias RemoveXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32
    typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    /// glibc functions whose headers the Glibc module does not import, looked up at run time.
    static func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("glibc symbol \(name) not found")
        }
        return unsafeBitCast(sym, to: type)
    }

    static let renameat2Fn: RenameAt2? = symbol("renameat2", as: RenameAt2.self)
    static let setxattr = symbol("setxattr", as: SetXattr.self)
    static let lsetxattr = symbol("lsetxattr", as: SetXattr.self)
    static let getxattr = symbol("getxattr", as: GetXattr.self)
    static let lgetxattr = symbol("lgetxattr", as: GetXattr.self)
    static let llistxattr = symbol("llistxattr", as: ListXattr.self)
    static let removexattr = symbol("removexattr", as: RemoveXattr.self)
    static let lremovexattr = symbol("lremovexattr", as: RemoveXattr.self)
    static let addchdir = symbol("posix_spawn_file_actions_addchdir_np", as: AddChdir.self)
}

/// Payload described by a seed and a length, so op descriptions stay short.
struct ModelData: CustomStringConvertible, Sendable {
    var seed: UInt64
    var count: Int
    var bytes: [UInt8] {
        var r = SeededGenerator(seed: seed)
        return r.bytes(count)
    }
    var description: String { "\(count)B#\(String(seed & 0xFFFF, radix: 16))" }
}

enum ModelTime: CustomStringConvertible, Sendable {
    case at(Int, Int)
    case now
    case omit
    var timespec: timespec {
        switch self {
        case .at(let s, let n): return Glibc.timespec(tv_sec: s, tv_nsec: n)
        case .now: return Glibc.timespec(tv_sec: 0, tv_nsec: ModelConst.utimeNow)
        case .omit: return Glibc.timespec(tv_sec: 0, tv_nsec: ModelConst.utimeOmit)
        }
    }
    var description: String {
        switch self {
        case .at(let s, let n): return "\(s).\(String(format: "%09d", n))"
        case .now: return "NOW"
        case .omit: return "OMIT"
        }
    }
}

/// One file-system operation of the model test, applied identically to several trees.
enum ModelOp: CustomStringConvertible, Sendable {
    case create(String, excl: Bool, trunc: Bool, mode: mode_t, data: ModelData)
    case write(String, offset: Int, data: ModelData)
    case append(String, data: ModelData)
    case truncate(String, length: Int)
    case read(String, offset: Int, length: Int)
    case mkdir(String, mode: mode_t)
    case rmdir(String)
    case unlink(String)
    case rename(String, String, noReplace: Bool)
    case symlink(target: String, String)
    case chmod(String, mode: mode_t)
    case utimens(String, atime: ModelTime, mtime: ModelTime, noFollow: Bool)
    case setxattr(String, name: String, value: ModelData, flags: Int32, noFollow: Bool)
    case removexattr(String, name: String, noFollow: Bool)
    case getxattr(String, name: String, noFollow: Bool)
    // Operations on descriptors kept open across other operations (slot = which descriptor).
    case openKeep(slot: Int, String, flags: Int32, mode: mode_t)
    case fdWrite(slot: Int, offset: Int, data: ModelData)
    case fdRead(slot: Int, offset: Int, length: Int)
    case fdTruncate(slot: Int, length: Int)
    case fdStat(slot: Int)
    case fdSync(slot: Int)
    case fdClose(slot: Int)

    static func flagsText(_ f: Int32) -> String {
        var parts = [f & O_ACCMODE == O_RDONLY ? "O_RDONLY" : f & O_ACCMODE == O_WRONLY ? "O_WRONLY" : "O_RDWR"]
        if f & O_CREAT != 0 { parts.append("O_CREAT") }
        if f & O_EXCL != 0 { parts.append("O_EXCL") }
        if f & O_TRUNC != 0 { parts.append("O_TRUNC") }
        if f & O_APPEND != 0 { parts.append("O_APPEND") }
        return parts.joined(separator: "|")
    }

    static func show(_ p: String) -> String {
        let s = p.isEmpty ? "." : p
        return s.count > 60 ? "\"\(s.prefix(20))…(\(s.count) chars)\"" : "\"\(s)\""
    }

    var description: String {
        let o = { (m: mode_t) in "0" + String(m, radix: 8) }
        switch self {
        case .create(let p, let excl, let trunc, let mode, let data):
            return
                "create(\(Self.show(p)), O_CREAT\(excl ? "|O_EXCL" : "")\(trunc ? "|O_TRUNC" : ""), \(o(mode))) + write \(data)"
        case .write(let p, let off, let data): return "pwrite(\(Self.show(p)), off \(off), \(data))"
        case .append(let p, let data): return "append(\(Self.show(p)), \(data))"
        case .truncate(let p, let len): return "truncate(\(Self.show(p)), \(len))"
        case .read(let p, let off, let len): return "pread(\(Self.show(p)), off \(off), len \(len))"
        case .mkdir(let p, let mode): return "mkdir(\(Self.show(p)), \(o(mode)))"
        case .rmdir(let p): return "rmdir(\(Self.show(p)))"
        case .unlink(let p): return "unlink(\(Self.show(p)))"
        case .rename(let a, let b, let nr):
            return "rename\(nr ? "at2[NOREPLACE]" : "")(\(Self.show(a)), \(Self.show(b)))"
        case .symlink(let t, let p): return "symlink(target \(Self.show(t)), \(Self.show(p)))"
        case .chmod(let p, let mode): return "chmod(\(Self.show(p)), \(o(mode)))"
        case .utimens(let p, let a, let m, let nf):
            return "utimensat(\(Self.show(p)), atime \(a), mtime \(m)\(nf ? ", AT_SYMLINK_NOFOLLOW" : ""))"
        case .setxattr(let p, let n, let v, let f, let nf):
            return
                "\(nf ? "l" : "")setxattr(\(Self.show(p)), \(n), \(v), flags \(f == 1 ? "CREATE" : f == 2 ? "REPLACE" : "0"))"
        case .removexattr(let p, let n, let nf): return "\(nf ? "l" : "")removexattr(\(Self.show(p)), \(n))"
        case .getxattr(let p, let n, let nf): return "\(nf ? "l" : "")getxattr(\(Self.show(p)), \(n))"
        case .openKeep(let slot, let p, let f, let mode):
            return "open#\(slot)(\(Self.show(p)), \(Self.flagsText(f)), \(o(mode)))"
        case .fdWrite(let slot, let off, let data): return "pwrite#\(slot)(off \(off), \(data))"
        case .fdRead(let slot, let off, let len): return "pread#\(slot)(off \(off), len \(len))"
        case .fdTruncate(let slot, let len): return "ftruncate#\(slot)(\(len))"
        case .fdStat(let slot): return "fstat#\(slot)"
        case .fdSync(let slot): return "fsync#\(slot)"
        case .fdClose(let slot): return "close#\(slot)"
        }
    }

    var name: String { String(description.prefix { $0 != "(" }) }

    /// Is this op expected to modify the tree (as opposed to only reading)?
    var mutates: Bool {
        switch self {
        case .read, .getxattr, .fdRead, .fdStat, .fdSync, .fdClose: return false
        default: return true
        }
    }

    /// Applies the op under root; returns a string describing the result (success details or errno).
    func apply(root: String, fds: inout [Int: Int32]) -> String {
        let j = { (p: String) in ModelSys.join(root, p) }
        switch self {
        case .openKeep(let slot, let p, let f, let mode):
            if let old = fds.removeValue(forKey: slot) { close(old) }
            let fd = open(j(p), f | O_CLOEXEC, mode)
            guard fd >= 0 else { return ModelSys.errnoName(errno) }
            fds[slot] = fd
            return "ok"
        case .fdWrite(let slot, let off, let data):
            guard let fd = fds[slot] else { return "slot closed" }
            switch ModelSys.writeAll(fd: fd, data.bytes, offset: fcntl(fd, F_GETFL) & O_APPEND != 0 ? nil : off) {
            case .success(let n): return "ok w=\(n)"
            case .failure(let e): return "write:\(e)"
            }
        case .fdRead(let slot, let off, let len):
            guard let fd = fds[slot] else { return "slot closed" }
            var buf = [UInt8](repeating: 0, count: len)
            let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, len, off_t(off)) }
            guard n >= 0 else { return "pread:" + ModelSys.errnoName(errno) }
            return "ok n=\(n) h=\(ModelHash.hex(ModelHash.fnv1a(Array(buf[0..<n]))))"
        case .fdTruncate(let slot, let len):
            guard let fd = fds[slot] else { return "slot closed" }
            return ftruncate(fd, off_t(len)) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .fdStat(let slot):
            guard let fd = fds[slot] else { return "slot closed" }
            var st = stat()
            guard fstat(fd, &st) == 0 else { return ModelSys.errnoName(errno) }
            // Directory sizes are file-system specific.
            let size = st.st_mode & S_IFMT == S_IFDIR ? "-" : "\(st.st_size)"
            return
                "ok \(ModelSys.kindChar(st.st_mode)) size=\(size) mode=0\(String(st.st_mode & 0o7777, radix: 8)) nlink=\(st.st_nlink)"
        case .fdSync(let slot):
            guard let fd = fds[slot] else { return "slot closed" }
            return fsync(fd) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .fdClose(let slot):
            guard let fd = fds.removeValue(forKey: slot) else { return "slot closed" }
            return close(fd) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .create(let p, let excl, let trunc, let mode, let data):
            var flags = O_CREAT | O_WRONLY | O_CLOEXEC
            if excl { flags |= O_EXCL }
            if trunc { flags |= O_TRUNC }
            let fd = open(j(p), flags, mode)
            guard fd >= 0 else { return "open:" + ModelSys.errnoName(errno) }
            return Self.writeAndClose(fd: fd, data: data, offset: nil)
        case .write(let p, let off, let data):
            let fd = open(j(p), O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { return "open:" + ModelSys.errnoName(errno) }
            return Self.writeAndClose(fd: fd, data: data, offset: off)
        case .append(let p, let data):
            let fd = open(j(p), O_WRONLY | O_APPEND | O_CLOEXEC)
            guard fd >= 0 else { return "open:" + ModelSys.errnoName(errno) }
            return Self.writeAndClose(fd: fd, data: data, offset: nil)
        case .truncate(let p, let len):
            return Glibc.truncate(j(p), off_t(len)) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .read(let p, let off, let len):
            let fd = open(j(p), O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return "open:" + ModelSys.errnoName(errno) }
            defer { close(fd) }
            var buf = [UInt8](repeating: 0, count: len)
            var got = 0
            while got < len {
                let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, len - got, off_t(off + got)) }
                if n < 0 { return "pread:" + ModelSys.errnoName(errno) }
                if n == 0 { break }
                got += n
            }
            return "ok n=\(got) h=\(ModelHash.hex(ModelHash.fnv1a(Array(buf[0..<got]))))"
        case .mkdir(let p, let mode):
            return Glibc.mkdir(j(p), mode) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .rmdir(let p):
            return Glibc.rmdir(j(p)) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .unlink(let p):
            return Glibc.unlink(j(p)) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .rename(let a, let b, let nr):
            if nr {
                guard let f = ModelConst.renameat2Fn else { return "renameat2 unavailable" }
                return f(AT_FDCWD, j(a), AT_FDCWD, j(b), ModelConst.renameNoReplace) == 0
                    ? "ok" : ModelSys.errnoName(errno)
            }
            return Glibc.rename(j(a), j(b)) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .symlink(let t, let p):
            return Glibc.symlink(t, j(p)) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .chmod(let p, let mode):
            return Glibc.chmod(j(p), mode) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .utimens(let p, let a, let m, let nf):
            var ts = [a.timespec, m.timespec]
            return utimensat(AT_FDCWD, j(p), &ts, nf ? AT_SYMLINK_NOFOLLOW : 0) == 0 ? "ok" : ModelSys.errnoName(errno)
        case .setxattr(let p, let n, let v, let f, let nf):
            let bytes = v.bytes
            let rc = bytes.withUnsafeBytes { b in
                nf
                    ? ModelConst.lsetxattr(j(p), n, b.baseAddress, b.count, f)
                    : ModelConst.setxattr(j(p), n, b.baseAddress, b.count, f)
            }
            return rc == 0 ? "ok" : ModelSys.errnoName(errno)
        case .removexattr(let p, let n, let nf):
            return (nf ? ModelConst.lremovexattr(j(p), n) : ModelConst.removexattr(j(p), n)) == 0
                ? "ok" : ModelSys.errnoName(errno)
        case .getxattr(let p, let n, let nf):
            var buf = [UInt8](repeating: 0, count: 65536)
            let r = nf ? ModelConst.lgetxattr(j(p), n, &buf, buf.count) : ModelConst.getxattr(j(p), n, &buf, buf.count)
            return r >= 0 ? "ok v=\(ModelSys.hex(Array(buf[0..<r])))" : ModelSys.errnoName(errno)
        }
    }

    private static func writeAndClose(fd: Int32, data: ModelData, offset: Int?) -> String {
        var result: String
        if data.count == 0 {
            result = "ok"
        } else {
            switch ModelSys.writeAll(fd: fd, data.bytes, offset: offset) {
            case .success(let n): result = "ok w=\(n)"
            case .failure(let e): result = "write:\(e)"
            }
        }
        if close(fd) != 0 { result += " close:" + ModelSys.errnoName(errno) }
        return result
    }
}
