import Foundation
import Glibc

/// One entry of a tree snapshot: everything the tests compare.
struct ModelEntry: Equatable, Sendable {
    var kind: Character = "?"
    var mode: UInt32 = 0  // permission bits (07777)
    var size: Int64 = 0
    var nlink: UInt64 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
    var mtimeSec: Int = 0
    var mtimeNsec: Int = 0
    var target: String? = nil  // symlinks
    var hash: String? = nil  // regular files: FNV-1a of the content, plus its length
    var xattrs: [String: String] = [:]
    var problems: [String] = []  // consistency problems found while reading this entry

    var mtime: String { "\(mtimeSec).\(String(format: "%09d", mtimeNsec))" }
}

/// A full snapshot of a directory tree, keyed by path relative to the root ("" is the root).
struct ModelTree: Sendable {
    var entries: [String: ModelEntry] = [:]
    /// Problems independent of an entry (unreadable directories, ...).
    var problems: [String] = []

    static func snapshot(_ root: String, contents: Bool = true, xattrs: Bool = true) -> ModelTree {
        var tree = ModelTree()
        walk(root: root, rel: "", into: &tree, contents: contents, xattrs: xattrs)
        return tree
    }

    static func entry(root: String, rel: String, contents: Bool = true, xattrs: Bool = true) -> ModelEntry? {
        let path = ModelSys.join(root, rel)
        guard let st = ModelSys.lstatOrNil(path) else { return nil }
        var e = ModelEntry()
        e.kind = ModelSys.kindChar(st.st_mode)
        e.mode = UInt32(st.st_mode & 0o7777)
        e.size = Int64(st.st_size)
        e.nlink = UInt64(st.st_nlink)
        e.uid = st.st_uid
        e.gid = st.st_gid
        e.mtimeSec = Int(st.st_mtim.tv_sec)
        e.mtimeNsec = Int(st.st_mtim.tv_nsec)
        switch e.kind {
        case "l":
            if let t = ModelSys.readLink(path) {
                e.target = t
            } else {
                e.problems.append("readlink: \(ModelSys.errnoName(errno))")
            }
        case "f" where contents:
            switch ModelSys.readAll(path) {
            case .success(let bytes):
                e.hash = "\(bytes.count):\(ModelHash.hex(ModelHash.fnv1a(bytes)))"
                if Int64(bytes.count) != e.size {
                    e.problems.append("read \(bytes.count) bytes but st_size is \(e.size)")
                }
            case .failure(let err):
                e.problems.append("read: \(err)")
            }
        default:
            break
        }
        if xattrs && e.kind != "l" {
            switch ModelSys.userXattrs(path) {
            case .success(let x): e.xattrs = x
            case .failure(let err): e.problems.append("listxattr: \(err)")
            }
        }
        return e
    }

    private static func walk(root: String, rel: String, into tree: inout ModelTree, contents: Bool, xattrs: Bool) {
        guard let e = entry(root: root, rel: rel, contents: contents, xattrs: xattrs) else {
            tree.problems.append("lstat(\(rel.isEmpty ? "<root>" : rel)): \(ModelSys.errnoName(errno))")
            return
        }
        tree.entries[rel] = e
        guard e.kind == "d" else { return }
        switch ModelSys.listDir(ModelSys.join(root, rel)) {
        case .failure(let err):
            tree.problems.append("readdir(\(rel.isEmpty ? "<root>" : rel)): \(err)")
        case .success(let names):
            var seen = Set<String>()
            for (name, dtype) in names {
                let child = rel.isEmpty ? name : rel + "/" + name
                if !seen.insert(name).inserted {
                    tree.problems.append("readdir(\(rel.isEmpty ? "<root>" : rel)) lists \(name) twice")
                    continue
                }
                guard let ce = entry(root: root, rel: child, contents: contents, xattrs: xattrs) else {
                    tree.problems.append("readdir lists \(child) but lstat fails: \(ModelSys.errnoName(errno))")
                    continue
                }
                let expected: UInt8 =
                    ce.kind == "f"
                    ? UInt8(DT_REG) : ce.kind == "d" ? UInt8(DT_DIR) : ce.kind == "l" ? UInt8(DT_LNK) : 255
                if dtype != UInt8(DT_UNKNOWN) && expected != 255 && dtype != expected {
                    tree.problems.append("readdir d_type \(dtype) of \(child) disagrees with lstat kind \(ce.kind)")
                }
                if ce.kind == "d" {
                    walk(root: root, rel: child, into: &tree, contents: contents, xattrs: xattrs)
                } else {
                    tree.entries[child] = ce
                }
            }
        }
    }

    /// Differences between two snapshots, as human-readable lines.
    /// - exactMtimes: paths whose mtimes must agree to the nanosecond; nil means all paths.
    /// - compareRootMode: the roots of two different folders may have different modes.
    static func diff(
        _ a: ModelTree, _ b: ModelTree, labels: (String, String),
        exactMtimes: Set<String>?, compareRootMode: Bool = false,
        secondsOnlyMtimes: Bool = false, compareOwner: Bool = true
    ) -> [String] {
        var out: [String] = []
        let (la, lb) = labels
        for p in a.problems { out.append("\(la): \(p)") }
        for p in b.problems { out.append("\(lb): \(p)") }
        let keys = Set(a.entries.keys).union(b.entries.keys).sorted()
        for k in keys {
            let name = k.isEmpty ? "<root>" : k
            guard let x = a.entries[k] else {
                out.append("\(name): missing in \(la), present in \(lb) (kind \(b.entries[k]!.kind))")
                continue
            }
            guard let y = b.entries[k] else {
                out.append("\(name): present in \(la) (kind \(x.kind)), missing in \(lb)")
                continue
            }
            func field<T: Equatable>(_ f: String, _ u: T, _ v: T) {
                if u != v { out.append("\(name): \(f) \(la)=\(u) \(lb)=\(v)") }
            }
            for p in x.problems { out.append("\(name): \(la) problem: \(p)") }
            for p in y.problems { out.append("\(name): \(lb) problem: \(p)") }
            field("kind", x.kind, y.kind)
            guard x.kind == y.kind else { continue }
            if !k.isEmpty || compareRootMode { field("mode", String(x.mode, radix: 8), String(y.mode, radix: 8)) }
            if compareOwner {
                field("uid", x.uid, y.uid)
                field("gid", x.gid, y.gid)
            }
            if x.kind != "d" {
                field("size", x.size, y.size)
                field("nlink", x.nlink, y.nlink)
            }
            if x.kind == "l" { field("symlink target", x.target ?? "nil", y.target ?? "nil") }
            if x.kind == "f" { field("content", x.hash ?? "nil", y.hash ?? "nil") }
            if exactMtimes == nil || exactMtimes!.contains(k) {
                if secondsOnlyMtimes {
                    field("mtime(s)", x.mtimeSec, y.mtimeSec)
                } else {
                    field("mtime", x.mtime, y.mtime)
                }
            }
            field(
                "user xattrs",
                x.xattrs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","),
                y.xattrs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","))
        }
        return out
    }
}

enum ModelMounts {
    /// True when something is mounted exactly at path.
    static func isMounted(_ path: String) -> Bool { ModelSys.mountCount(at: path) > 0 }

    /// fuse mounts of ours (under /tmp/syncfs-tests-) still present.
    static func leftoverFuseMounts(under prefix: String) -> [String] {
        ModelSys.mountPoints().filter { $0.fstype.hasPrefix("fuse") && $0.point.hasPrefix(prefix) }.map(\.point)
    }
}
