import Foundation
import Glibc
import TestSupport
import Testing

/// Everything the writers did, and what each acknowledged fsync covered.
final class CrashState: @unchecked Sendable {
    static let page = 4096
    static let maxPages = 16

    struct FileTrack {
        /// Content versions, oldest first; nil means "the file does not exist".
        var versions: [[UInt8]?]
        /// Index into versions of the last version an acknowledged fsync covered (nil: none).
        var durable: Int?
    }

    let root: String
    let threads: Int
    let seed: UInt64
    private let lock = NSLock()
    private let journalFD: Int32
    private var files: [String: FileTrack] = [:]
    private var dirs: [String] = []
    private(set) var errors: [String] = []
    private var isKilled = false
    private var fsyncing = 0
    private var durableEvents = 0
    private var ops = 0

    init(root: String, journalPath: String, threads: Int, seed: UInt64) {
        self.root = root
        self.threads = threads
        self.seed = seed
        journalFD = open(journalPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    }

    deinit { close(journalFD) }

    func filesOf(thread t: Int) -> [String] {
        (0..<6).map { "t\(t)/f\($0)" } + (6..<9).map { "t\(t)/sub/f\($0)" }
    }

    func journal(_ line: String) {
        _ = ModelSys.writeAll(fd: journalFD, Array((line + "\n").utf8))
    }

    func path(_ rel: String) -> String { root + "/" + rel }

    func error(_ s: String) {
        lock.lock()
        defer { lock.unlock() }
        errors.append(isKilled ? s + " (after kill)" : s)
    }

    func clearErrors() {
        lock.lock()
        errors = []
        durableEvents = 0
        ops = 0
        lock.unlock()
    }
    func killed(_ k: Bool) {
        lock.lock()
        isKilled = k
        lock.unlock()
    }
    func inFsync() -> Int {
        lock.lock()
        defer { lock.unlock() }
        return fsyncing
    }
    func durableEventsThisCycle() -> Int {
        lock.lock()
        defer { lock.unlock() }
        return durableEvents
    }
    func opsThisCycle() -> Int {
        lock.lock()
        defer { lock.unlock() }
        return ops
    }

    /// Every tracked file's newest content (nil: absent).
    func newestContents() -> [String: [UInt8]?] {
        lock.lock()
        defer { lock.unlock() }
        return files.mapValues { $0.versions.last ?? nil }
    }

    func current(_ rel: String) -> [UInt8]? {
        lock.lock()
        defer { lock.unlock() }
        return files[rel]?.versions.last ?? nil
    }

    /// Records a new version before the operation that produces it starts.
    func intend(_ rel: String, _ content: [UInt8]?, _ what: String) {
        lock.lock()
        files[rel, default: FileTrack(versions: [nil], durable: nil)].versions.append(content)
        let v = files[rel]!.versions.count - 1
        ops += 1
        lock.unlock()
        journal(
            "intent \(rel) v\(v) \(what) -> \(content.map { "\($0.count)B \(ModelHash.hex(ModelHash.fnv1a($0)))" } ?? "absent")"
        )
    }

    /// fsync(fd) with the in-fsync counter; on success, everything intended for rel so far is durable.
    func fsyncAndAcknowledge(_ fd: Int32, _ rel: String?, what: String) -> Bool {
        lock.lock()
        fsyncing += 1
        let version = rel.flatMap { files[$0].map { $0.versions.count - 1 } }
        lock.unlock()
        let rc = fsync(fd)
        let e = errno
        lock.lock()
        fsyncing -= 1
        if rc == 0, let rel, let version {
            files[rel]!.durable = max(files[rel]!.durable ?? -1, version)
            // Older versions can no longer be the content after a crash.
            let d = files[rel]!.durable!
            if d > 0 {
                files[rel]!.versions.removeFirst(d)
                files[rel]!.durable = 0
            }
            durableEvents += 1
        }
        lock.unlock()
        if rc != 0 {
            error("fsync \(what) \(rel ?? ""): \(ModelSys.errnoName(e))")
            return false
        }
        if let rel, let version { journal("durable \(rel) v\(version) (\(what))") }
        return true
    }

    func fsyncDir(_ rel: String, covering file: String?) -> Bool {
        let fd = open(path(rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            error("open dir \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        defer { close(fd) }
        return fsyncAndAcknowledge(fd, file, what: "directory \(rel)")
    }

    /// Creates each thread's directories and files, all fsync'd (files and directories).
    func setUp() -> Bool {
        var rng = SeededGenerator(seed: seed)
        for t in 0..<threads {
            for d in ["t\(t)", "t\(t)/sub"] {
                guard mkdir(path(d), 0o755) == 0 else {
                    error("mkdir \(d): \(ModelSys.errnoName(errno))")
                    return false
                }
                dirs.append(d)
            }
            for rel in filesOf(thread: t) {
                let content = rng.bytes(rng.int(0...(Self.page * Self.maxPages)))
                // Empty from `open(O_CREAT)` until the write (see `CrashWorkload.deleteOrCreate`).
                intend(rel, [], "create")
                intend(rel, content, "write \(content.count)B")
                let fd = open(path(rel), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
                guard fd >= 0 else {
                    error("create \(rel): \(ModelSys.errnoName(errno))")
                    return false
                }
                defer { close(fd) }
                guard case .success = ModelSys.writeAll(fd: fd, content) else {
                    error("write \(rel)")
                    return false
                }
                guard fsyncAndAcknowledge(fd, rel, what: "file") else { return false }
            }
            for d in ["t\(t)/sub", "t\(t)"] where !fsyncDir(d, covering: nil) { return false }
        }
        return fsyncDir(".", covering: nil)
    }

    /// The per-page rule: after a crash, a file holds the content of one version at or after its
    /// durable one, where every page may come from a different such version (un-fsync'd writes
    /// can be lost independently), and the size is the size of one of them.
    func checkDurable(exact: Bool) -> [String] {
        lock.lock()
        let snapshot = files
        lock.unlock()
        var failures: [String] = []
        for (rel, track) in snapshot.sorted(by: { $0.key < $1.key }) {
            guard let d = track.durable else { continue }
            let candidates = Array(track.versions[d...])
            let actual: [UInt8]?
            switch ModelSys.readAll(path(rel)) {
            case .success(let b): actual = b
            case .failure(let e) where e.code == ENOENT: actual = nil
            case .failure(let e):
                failures.append("\(rel): reading the file failed: \(e)")
                continue
            }
            let describe = { (c: [UInt8]?) in
                c.map { "\($0.count) bytes \(ModelHash.hex(ModelHash.fnv1a($0)))" } ?? "absent"
            }
            if exact {
                if actual != track.versions.last! {
                    failures.append(
                        "\(rel): after a clean remount holds \(describe(actual)), last fsync'd content is \(describe(track.versions.last!))"
                    )
                }
                continue
            }
            guard let a = actual else {
                if !candidates.contains(where: { $0 == nil }) {
                    failures.append(
                        "\(rel): file is missing, but fsync was acknowledged for \(describe(candidates[0]))"
                            + (candidates.count > 1 ? " (and \(candidates.count - 1) later versions, none absent)" : "")
                    )
                }
                continue
            }
            let present = candidates.compactMap { $0 }
            if present.isEmpty {
                failures.append("\(rel): exists (\(describe(a))) although its acknowledged state is deleted")
                continue
            }
            if !present.contains(where: { $0.count == a.count }) {
                failures.append(
                    "\(rel): size \(a.count) matches no version since the last acknowledged fsync "
                        + "(sizes \(present.map(\.count))); fsync'd: \(describe(candidates[0]))")
                continue
            }
            let pages = (a.count + Self.page - 1) / Self.page
            for p in 0..<pages {
                let slice = Self.pageOf(a, p, size: a.count)
                if !present.contains(where: { Self.pageOf($0, p, size: a.count) == slice }) {
                    let fsynced = candidates[0].map { Self.pageOf($0, p, size: a.count) }
                    let zero = slice.allSatisfy { $0 == 0 }
                    failures.append(
                        "\(rel): page \(p) (bytes \(p * Self.page)..<\(min((p + 1) * Self.page, a.count))) "
                            + "matches no version since the last acknowledged fsync\(zero ? " (it reads as zeros)" : "")"
                            + "; fsync'd file: \(describe(candidates[0])), \(candidates.count - 1) later versions"
                            + (fsynced.map {
                                " first differing byte at \(Self.firstDiff($0, slice).map(String.init) ?? "-")"
                            } ?? ""))
                    break
                }
            }
        }
        return failures
    }

    static func pageOf(_ b: [UInt8], _ p: Int, size: Int) -> [UInt8] {
        let start = p * page
        let end = min((p + 1) * page, size)
        var out = [UInt8](repeating: 0, count: max(end - start, 0))
        if start < b.count {
            let upto = min(end, b.count)
            out.replaceSubrange(0..<(upto - start), with: b[start..<upto])
        }
        return out
    }

    static func firstDiff(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        for i in 0..<min(a.count, b.count) where a[i] != b[i] { return i }
        return a.count == b.count ? nil : min(a.count, b.count)
    }

    /// After verification: what the files hold now becomes the new baseline, fsync'd.
    func rebaseline() -> Bool {
        lock.lock()
        let names = files.keys.sorted()
        lock.unlock()
        var ok = true
        for rel in names {
            let content: [UInt8]?
            switch ModelSys.readAll(path(rel)) {
            case .success(let b): content = b
            case .failure(let e) where e.code == ENOENT: content = nil
            case .failure(let e):
                error("read \(rel): \(e)")
                ok = false
                continue
            }
            lock.lock()
            files[rel] = FileTrack(versions: [content], durable: nil)
            lock.unlock()
            if content != nil {
                let fd = open(path(rel), O_RDONLY | O_CLOEXEC)
                if fd < 0 {
                    error("open \(rel): \(ModelSys.errnoName(errno))")
                    ok = false
                    continue
                }
                if !fsyncAndAcknowledge(fd, rel, what: "rebaseline") { ok = false }
                close(fd)
            } else if !fsyncDir(ModelSys.parent(rel), covering: rel) {
                ok = false
            }
        }
        // Leftover temporary files of interrupted saves go away.
        for t in 0..<threads {
            for d in ["t\(t)", "t\(t)/sub"] {
                if case .success(let names) = ModelSys.listDir(path(d)) {
                    for n in names where n.name.contains(".tmp") { unlink(path(d + "/" + n.name)) }
                }
            }
        }
        return ok
    }
}
