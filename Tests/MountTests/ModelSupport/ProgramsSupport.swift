import Foundation
import Glibc
import TestSupport

struct ProgramsError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Generates a deterministic tree of nested directories, files of many sizes, modes and names,
/// symlinks (to files, to directories, dangling, absolute), nanosecond mtimes and user xattrs.
enum ProgramsTreeGen {
    struct Stats: CustomStringConvertible {
        var dirs = 0, files = 0, symlinks = 0, bytes = 0, xattrs = 0
        var description: String {
            "\(dirs) dirs, \(files) files (\(bytes) bytes), \(symlinks) symlinks, \(xattrs) xattrs"
        }
    }

    static let names = [
        "alpha", "beta", "gamma", "delta", "with space", "ünïcødé-名前", ".dotfile", "UPPER", "x-y_z.1",
        String(repeating: "long", count: 50),
    ]

    @discardableResult
    static func generate(
        at root: String, seed: UInt64, files fileCount: Int = 300, symlinks linkCount: Int = 30,
        xattrs: Bool = true, times: Bool = true
    ) throws -> Stats {
        var rng = SeededGenerator(seed: seed)
        var stats = Stats()
        var dirs: [String] = [""]
        // Directories: up to depth 4.
        for i in 0..<40 {
            let parent = rng.pick(dirs.filter { ModelListing.depth($0) < 4 })
            let name = "\(rng.pick(names))-d\(i)"
            let rel = parent.isEmpty ? name : parent + "/" + name
            guard mkdir(ModelSys.join(root, rel), 0o755) == 0 else {
                throw ProgramsError("mkdir \(rel): \(ModelSys.errnoName(errno))")
            }
            dirs.append(rel)
            stats.dirs += 1
        }
        var files: [String] = []
        for i in 0..<fileCount {
            let dir = rng.pick(dirs)
            let name = "\(rng.pick(names))-\(i)\(rng.pick([".txt", ".bin", "", ".c", ".json"]))"
            let rel = dir.isEmpty ? name : dir + "/" + name
            let r = rng.below(100)
            let size =
                r < 5
                ? 0 : r < 65 ? rng.int(1...4096) : r < 97 ? rng.int(4097...100_000) : rng.int(1_000_000...3_000_000)
            let content: [UInt8]
            if rng.chance(0.5) {
                // Text, so that git has something to diff and delta.
                var text = ""
                while text.utf8.count < size { text += "line \(rng.below(1000)) of \(name): \(rng.next())\n" }
                content = Array(text.utf8.prefix(size))
            } else {
                content = rng.bytes(size)
            }
            let mode = rng.pick([0o644, 0o644, 0o755, 0o600, 0o444, 0o640] as [mode_t])
            let fd = open(ModelSys.join(root, rel), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ProgramsError("create \(rel): \(ModelSys.errnoName(errno))") }
            let w = ModelSys.writeAll(fd: fd, content)
            close(fd)
            guard case .success = w else { throw ProgramsError("write \(rel): \(w)") }
            guard chmod(ModelSys.join(root, rel), mode) == 0 else {
                throw ProgramsError("chmod \(rel): \(ModelSys.errnoName(errno))")
            }
            if xattrs && rng.chance(0.2) {
                let v = rng.bytes(rng.int(1...100))
                let rc = v.withUnsafeBytes {
                    ModelConst.lsetxattr(
                        ModelSys.join(root, rel), "user.gen.\(rng.below(3))", $0.baseAddress, $0.count, 0)
                }
                guard rc == 0 else { throw ProgramsError("setxattr \(rel): \(ModelSys.errnoName(errno))") }
                stats.xattrs += 1
            }
            files.append(rel)
            stats.files += 1
            stats.bytes += size
        }
        var links: [String] = []
        for i in 0..<linkCount {
            let dir = rng.pick(dirs)
            let rel = (dir.isEmpty ? "" : dir + "/") + "link-\(i)"
            let target: String
            switch rng.below(4) {
            case 0: target = relative(from: dir, to: rng.pick(files))
            case 1: target = relative(from: dir, to: rng.pick(dirs))
            case 2: target = "dangling-\(i)"
            default: target = "/nonexistent/syncfs/\(i)"
            }
            guard symlink(target.isEmpty ? "." : target, ModelSys.join(root, rel)) == 0 else {
                throw ProgramsError("symlink \(rel): \(ModelSys.errnoName(errno))")
            }
            links.append(rel)
            stats.symlinks += 1
        }
        if xattrs {
            for d in dirs.dropFirst() where rng.chance(0.2) {
                let rc = ModelConst.lsetxattr(
                    ModelSys.join(root, d), "user.dir", "value-\(d.count)", d.count.description.count + 6, 0)
                guard rc == 0 else { throw ProgramsError("setxattr \(d): \(ModelSys.errnoName(errno))") }
                stats.xattrs += 1
            }
        }
        if times {
            // Deepest first, so setting a child's times does not disturb its directory afterwards.
            let all = (files + links + dirs.dropFirst()).sorted { ModelListing.depth($0) > ModelListing.depth($1) }
            for rel in all {
                var ts = [
                    timespec(tv_sec: rng.int(1_000_000_000...1_700_000_000), tv_nsec: rng.below(1_000_000_000)),
                    timespec(tv_sec: rng.int(1_000_000_000...1_700_000_000), tv_nsec: rng.below(1_000_000_000)),
                ]
                guard utimensat(AT_FDCWD, ModelSys.join(root, rel), &ts, AT_SYMLINK_NOFOLLOW) == 0 else {
                    throw ProgramsError("utimensat \(rel): \(ModelSys.errnoName(errno))")
                }
            }
            for d in dirs.dropFirst() where rng.chance(0.3) {
                _ = chmod(ModelSys.join(root, d), rng.pick([0o700, 0o775, 0o750] as [mode_t]))
            }
        }
        return stats
    }

    /// A relative symlink target from directory `from` to `to` (both relative to the same root).
    static func relative(from: String, to: String) -> String {
        let up = ModelListing.depth(from)
        let prefix = Array(repeating: "..", count: up).joined(separator: "/")
        if prefix.isEmpty { return to.isEmpty ? "." : to }
        return to.isEmpty ? prefix : prefix + "/" + to
    }
}

extension ModelTree {
    /// The snapshot with only the entries for which keep returns true.
    func filtered(_ keep: (String, ModelEntry) -> Bool) -> ModelTree {
        var t = ModelTree()
        t.problems = problems
        t.entries = entries.filter { keep($0.key, $0.value) }
        return t
    }

    /// The snapshot with every mode and mtime blanked (for comparisons where they are not preserved).
    func contentOnly(keepExecBit: Bool) -> ModelTree {
        var t = self
        for k in t.entries.keys {
            t.entries[k]!.mtimeSec = 0
            t.entries[k]!.mtimeNsec = 0
            t.entries[k]!.mode = keepExecBit && t.entries[k]!.kind == "f" ? (t.entries[k]!.mode & 0o100) : 0
        }
        return t
    }
}
