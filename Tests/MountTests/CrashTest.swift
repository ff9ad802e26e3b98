import Foundation
import Glibc
import Testing

/// Crash test: writer threads modify files on the folder and fsync some of them, journaling (outside
/// the folder) which content each fsync covered. The daemon is killed with SIGKILL at several points,
/// the folder is mounted again, and then:
/// - every file whose fsync returned holds its fsync'd content, or content written after it;
/// - the tree is readable and consistent (every listed name stat()s and reads);
/// - new files can be written;
/// - the dead kernel mount was cleared by the new daemon (exactly one mount on the mount point).
@Suite(.serialized)
struct CrashTest {
    enum Point: String, CaseIterable {
        case after200ms = "0.2 s into the workload"
        case after1s = "1 s into the workload"
        case midFsyncStorm = "in the middle of an fsync storm"
        case midRenameStorm = "in the middle of save-by-rename and unlink/create churn"
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func fsyncedDataSurvivesKill9(kind: TestFolder.Kind) throws {
        let folder = try TestFolder.make(kind)
        let journalDir = ModelSys.makeTempDir("syncfs-crash-journal")
        defer {
            folder.tearDown()
            ModelSys.removeTree(journalDir)
            #expect(!ModelMounts.isMounted(folder.root), "mount left behind at \(folder.root)")
        }
        let seed = ModelRandom.seed(env: "SYNCFS_CRASH_SEED", default: 0xC8A5_4001)
        let state = CrashState(root: folder.root, journalPath: journalDir + "/journal.log", threads: 3, seed: seed)
        try #require(state.setUp(), "setting up the initial files failed: \(state.errors)")
        state.clearErrors()

        for (cycle, point) in Point.allCases.enumerated() {
            let context =
                "cycle \(cycle + 1) (kill \(point.rawValue), \(kind.rawValue), SYNCFS_CRASH_SEED=0x\(String(seed, radix: 16)))"
            let workload = CrashWorkload(
                state: state, cycle: cycle,
                mode: point == .midFsyncStorm ? .fsyncStorm : point == .midRenameStorm ? .renameStorm : .mixed)
            workload.start()
            switch point {
            case .after200ms: usleep(200_000)
            case .after1s: usleep(1_000_000)
            case .midFsyncStorm, .midRenameStorm:
                usleep(300_000)
                let deadline = Date().addingTimeInterval(5)
                while state.inFsync() == 0 && Date() < deadline { usleep(200) }
            }
            let inFsyncAtKill = state.inFsync()
            state.killed(true)
            try folder.kill9()
            if kind == .mount {
                #expect(
                    ModelMounts.isMounted(folder.root),
                    "\(context): after kill9 the dead kernel mount should still be there")
                var sfs = statvfs()
                let rc = statvfs(folder.root, &sfs)
                let e = errno
                #expect(
                    rc != 0 && e == ENOTCONN,
                    "\(context): statvfs on the dead mount gave rc \(rc) \(ModelSys.errnoName(e)), expected ENOTCONN")
            }
            let joined = workload.stopAndJoin(timeout: 30)
            try #require(joined, "\(context): writer threads still blocked 30 s after the daemon was killed")
            let errorsBeforeKill = state.errors.filter { !$0.contains("after kill") }
            #expect(errorsBeforeKill.isEmpty, "\(context): errors before the kill: \(errorsBeforeKill.prefix(10))")
            let durable = state.durableEventsThisCycle()
            print(
                "crash[\(kind.rawValue)] \(context): \(state.opsThisCycle()) ops, \(durable) fsyncs acknowledged, "
                    + "\(inFsyncAtKill) threads inside fsync at the kill")
            #expect(durable > 0, "\(context): the workload acknowledged no fsync, so the cycle tests nothing")
            state.clearErrors()

            do {
                try folder.remount()
            } catch {
                Issue.record("\(context): remount after kill9 failed: \(error)")
                // Clear the dead mount ourselves, so the durability checks below still run (and report).
                if ModelMounts.isMounted(folder.root) {
                    let r = ModelProcess.run(["fusermount3", "-u", "-z", folder.root])
                    try #require(r.ok, "\(context): fusermount3 -u -z: \(r)")
                }
                try folder.remount()
            }
            state.killed(false)
            if kind == .mount {
                let count = ModelSys.mountCount(at: folder.root)
                #expect(
                    count == 1,
                    "\(context): \(count) mounts on \(folder.root) after remount; the dead one was not cleared")
                let fs = ModelSys.mountPoints().last { $0.point == folder.root }?.fstype ?? "none"
                #expect(fs.hasPrefix("fuse"), "\(context): mount point has \(fs) after remount")
            }
            verify(state: state, context: context)
            #expect(state.rebaseline(), "\(context): fsync of the recovered files failed: \(state.errors.prefix(10))")
            state.clearErrors()
        }

        // A clean unmount and mount at the end: every file exactly as last fsync'd.
        try folder.unmount()
        try folder.remount()
        verify(state: state, context: "after the final clean remount (\(kind.rawValue))", exact: true)
    }

    func verify(state: CrashState, context: String, exact: Bool = false) {
        // The tree: every listed name stat()s; every file reads fully, matching st_size.
        let tree = ModelTree.snapshot(state.root)
        for p in tree.problems { Issue.record("\(context): tree inconsistent: \(p)") }
        for (path, e) in tree.entries.sorted(by: { $0.key < $1.key }) {
            for p in e.problems { Issue.record("\(context): \(path): \(p)") }
        }
        // Every acknowledged fsync.
        for failure in state.checkDurable(exact: exact).prefix(20) {
            Issue.record("\(context): \(failure)")
        }
        // The folder still takes new files.
        let probe = state.root + "/probe-\(UInt32.random(in: 0...UInt32.max))"
        var rng = ModelRandom(seed: UInt64(getpid()))
        let data = rng.bytes(150_000)
        let fd = open(probe, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            Issue.record("\(context): creating a new file failed: open: \(ModelSys.errnoName(errno))")
            return
        }
        let w = ModelSys.writeAll(fd: fd, data)
        let s = fsync(fd)
        let se = errno
        close(fd)
        #expect(w == .success(data.count), "\(context): writing a new file: \(w)")
        #expect(s == 0, "\(context): fsync of a new file: \(ModelSys.errnoName(se))")
        let back = ModelSys.readAll(probe)
        #expect(back == .success(data), "\(context): reading the new file back gave different content")
        #expect(unlink(probe) == 0, "\(context): unlink of the new file: \(ModelSys.errnoName(errno))")
    }
}

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
        var rng = ModelRandom(seed: seed)
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
                intend(rel, content, "create")
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

/// Writer threads for one cycle.
final class CrashWorkload: @unchecked Sendable {
    enum Mode { case mixed, fsyncStorm, renameStorm }
    let state: CrashState
    let cycle: Int
    let mode: Mode
    private let done = DispatchGroup()
    private let lock = NSLock()
    private var stop = false

    init(state: CrashState, cycle: Int, mode: Mode) {
        self.state = state
        self.cycle = cycle
        self.mode = mode
    }

    func start() {
        for t in 0..<state.threads {
            done.enter()
            let thread = Thread { [self] in
                self.run(thread: t)
                self.done.leave()
            }
            thread.start()
        }
    }

    func stopAndJoin(timeout: Double) -> Bool {
        lock.lock()
        stop = true
        lock.unlock()
        return done.wait(timeout: .now() + timeout) == .success
    }

    private func shouldStop() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return stop
    }

    private func run(thread t: Int) {
        var rng = ModelRandom(seed: state.seed &+ UInt64(cycle * 100 + t + 1) &* 0x9E37_79B9)
        let files = state.filesOf(thread: t)
        while !shouldStop() {
            let rel = rng.pick(files)
            let ok: Bool
            switch mode {
            case .mixed:
                ok =
                    rng.weighted([50, 15, 10, 10, 8]) == 0
                    ? pageWrite(rel, &rng, fsyncChance: 0.5)
                    : rng.chance(0.5)
                        ? append(rel, &rng, fsyncChance: 0.5)
                        : rng.chance(0.5)
                            ? truncate(rel, &rng, fsyncChance: 0.5)
                            : rng.chance(0.7) ? save(rel, &rng) : deleteOrCreate(rel, &rng)
            case .fsyncStorm:
                ok = rng.chance(0.8) ? pageWrite(rel, &rng, fsyncChance: 1) : append(rel, &rng, fsyncChance: 1)
            case .renameStorm:
                ok = rng.chance(0.7) ? save(rel, &rng) : deleteOrCreate(rel, &rng)
            }
            if !ok { return }
        }
    }

    /// One write inside one page (so each write reaches the daemon whole), fsync'd with some probability.
    private func pageWrite(_ rel: String, _ rng: inout ModelRandom, fsyncChance: Double) -> Bool {
        guard var content = state.current(rel) else { return deleteOrCreate(rel, &rng) }
        let page = rng.below(CrashState.maxPages)
        let inPage = rng.below(CrashState.page)
        let len = rng.int(1...(CrashState.page - inPage))
        let offset = page * CrashState.page + inPage
        let bytes = rng.bytes(len)
        if content.count < offset + len { content += [UInt8](repeating: 0, count: offset + len - content.count) }
        content.replaceSubrange(offset..<(offset + len), with: bytes)
        state.intend(rel, content, "pwrite \(len)B at \(offset)")
        let fd = open(state.path(rel), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            state.error("open \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        defer { close(fd) }
        guard case .success = ModelSys.writeAll(fd: fd, bytes, offset: offset) else {
            state.error("pwrite \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return !rng.chance(fsyncChance) || state.fsyncAndAcknowledge(fd, rel, what: "file")
    }

    private func append(_ rel: String, _ rng: inout ModelRandom, fsyncChance: Double) -> Bool {
        guard var content = state.current(rel) else { return deleteOrCreate(rel, &rng) }
        if content.count >= CrashState.page * CrashState.maxPages {
            return truncate(rel, &rng, fsyncChance: fsyncChance)
        }
        let room = CrashState.page - content.count % CrashState.page
        let bytes = rng.bytes(rng.int(1...room))
        content += bytes
        state.intend(rel, content, "append \(bytes.count)B")
        let fd = open(state.path(rel), O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else {
            state.error("open \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        defer { close(fd) }
        guard case .success = ModelSys.writeAll(fd: fd, bytes) else {
            state.error("append \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return !rng.chance(fsyncChance) || state.fsyncAndAcknowledge(fd, rel, what: "file")
    }

    private func truncate(_ rel: String, _ rng: inout ModelRandom, fsyncChance: Double) -> Bool {
        guard var content = state.current(rel) else { return deleteOrCreate(rel, &rng) }
        let size = rng.int(0...(CrashState.page * CrashState.maxPages))
        if size < content.count {
            content.removeSubrange(size...)
        } else {
            content += [UInt8](repeating: 0, count: size - content.count)
        }
        state.intend(rel, content, "ftruncate \(size)")
        let fd = open(state.path(rel), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            state.error("open \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        defer { close(fd) }
        guard ftruncate(fd, off_t(size)) == 0 else {
            state.error("ftruncate \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return !rng.chance(fsyncChance) || state.fsyncAndAcknowledge(fd, rel, what: "file")
    }

    /// Save-by-rename as editors do it: write a temporary file, fsync it, rename it over, fsync the directory.
    private func save(_ rel: String, _ rng: inout ModelRandom) -> Bool {
        let content = rng.bytes(rng.int(0...(CrashState.page * CrashState.maxPages)))
        let tmp = rel + ".tmp\(cycle)"
        let fd = open(state.path(tmp), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            state.error("create \(tmp): \(ModelSys.errnoName(errno))")
            return false
        }
        guard case .success = ModelSys.writeAll(fd: fd, content) else {
            state.error("write \(tmp): \(ModelSys.errnoName(errno))")
            close(fd)
            return false
        }
        guard state.fsyncAndAcknowledge(fd, nil, what: "temporary file") else {
            close(fd)
            return false
        }
        close(fd)
        state.intend(rel, content, "rename \(tmp) over it")
        guard rename(state.path(tmp), state.path(rel)) == 0 else {
            state.error("rename \(tmp) -> \(rel): \(ModelSys.errnoName(errno))")
            return false
        }
        return state.fsyncDir(ModelSys.parent(rel), covering: rel)
    }

    /// Deletes an existing file or creates a missing one; either way the directory is fsync'd.
    private func deleteOrCreate(_ rel: String, _ rng: inout ModelRandom) -> Bool {
        if state.current(rel) != nil {
            state.intend(rel, nil, "unlink")
            guard unlink(state.path(rel)) == 0 else {
                state.error("unlink \(rel): \(ModelSys.errnoName(errno))")
                return false
            }
        } else {
            let content = rng.bytes(rng.int(0...(CrashState.page * 4)))
            state.intend(rel, content, "create")
            let fd = open(state.path(rel), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                state.error("create \(rel): \(ModelSys.errnoName(errno))")
                return false
            }
            defer { close(fd) }
            guard case .success = ModelSys.writeAll(fd: fd, content) else {
                state.error("write \(rel): \(ModelSys.errnoName(errno))")
                return false
            }
            // Content is durable now, the name only once the directory is fsync'd.
            guard state.fsyncAndAcknowledge(fd, nil, what: "new file") else { return false }
        }
        return state.fsyncDir(ModelSys.parent(rel), covering: rel)
    }
}
