import Foundation
import Glibc
import TestSupport
import Testing

/// Seeded randomized model test: thousands of random operations applied identically to the folder
/// under test and to a plain reference directory; every result (success or errno) must agree, and
/// after every batch the two trees must be identical. Periodically the folder is unmounted and
/// mounted again, and must come back exactly as it was.
///
/// Four seeds run by default; replay one with `SYNCFS_MODEL_SEED=<seed>` (then only that seed runs);
/// `SYNCFS_MODEL_OPS=<n>` changes the number of ops per seed (default 1500).
@Suite(.serialized)
struct ModelTest {
    static let seeds: [UInt64] = {
        let env = SeededGenerator.seed(env: "SYNCFS_MODEL_SEED", default: 0)
        return env != 0 ? [env] : [1, 2, 3, 8]
    }()

    @Test(arguments: TestFolder.Kind.allCases, seeds)
    func randomOperationsMatchPlainDirectory(kind: TestFolder.Kind, seed: UInt64) throws {
        let env = ProcessInfo.processInfo.environment
        let opCount = Int(env["SYNCFS_MODEL_OPS"] ?? "") ?? 1500
        let reference = try TestFolder.make(.plain)
        defer { reference.tearDown() }
        let subject = try TestFolder.make(kind)
        defer {
            subject.tearDown()
            #expect(!ModelMounts.isMounted(subject.root), "mount left behind at \(subject.root)")
        }
        if kind == .mount {
            let fs = ModelSys.mountPoints().last { $0.point == subject.root }?.fstype ?? "none"
            try #require(fs.hasPrefix("fuse"), "the mount kind is not a FUSE mount (\(fs))")
        }
        var run = ModelRun(seed: seed, kind: kind, reference: reference, subject: subject)
        try run.execute(opCount: opCount, batch: 100, remountEvery: 500)
        print(
            "model[\(kind.rawValue)] \(run.seedText): \(run.opsApplied) ops, \(run.successes) succeeded, "
                + "\(run.remounts) remounts, \(run.mtimeChecks) mtime effects checked, \(run.stamped.count) entries with exact mtimes"
        )
        #expect(
            run.successes > run.opsApplied / 4,
            "too few successful ops (\(run.successes) of \(run.opsApplied)) to mean anything (\(run.seedText))")
    }
}

/// Runs the model: generation, application to both trees, mtime tracking and comparisons.
struct ModelRun {
    let seed: UInt64
    let kind: TestFolder.Kind
    let reference: TestFolder
    let subject: TestFolder
    var gen: ModelGenerator
    /// Reference paths whose mtimes are known to be identical (to the nanosecond) in both trees.
    var stamped: Set<String> = []
    var recent: [String] = []
    var issues = 0
    var opsApplied = 0
    var successes = 0
    var remounts = 0
    var effectClasses: [String: Int] = [:]
    var resultClasses: [String: Int] = [:]
    /// Descriptors kept open across ops, per tree, and the reference path each one's file has now
    /// (nil once the file was unlinked or replaced).
    var refFDs: [Int: Int32] = [:]
    var subFDs: [Int: Int32] = [:]
    var slotPaths: [Int: String?] = [:]
    var mtimeChecks = 0
    var stampRng: SeededGenerator

    var seedText: String { "SYNCFS_MODEL_SEED=0x" + String(seed, radix: 16) }

    init(seed: UInt64, kind: TestFolder.Kind, reference: TestFolder, subject: TestFolder) {
        self.seed = seed
        self.kind = kind
        self.reference = reference
        self.subject = subject
        gen = ModelGenerator(seed: seed)
        stampRng = SeededGenerator(seed: seed ^ 0xA5A5_A5A5_A5A5_A5A5)
    }

    /// With SYNCFS_MODEL_LOG=<file>, every op and its results are written to <file>.<kind>.
    func log(_ line: String) {
        guard let path = ProcessInfo.processInfo.environment["SYNCFS_MODEL_LOG"], !path.isEmpty else { return }
        let fd = open(path + "." + kind.rawValue, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        _ = ModelSys.writeAll(fd: fd, Array((line + "\n").utf8))
        close(fd)
    }

    mutating func fail(_ message: String, withTrace: Bool = false) {
        issues += 1
        guard issues <= 30 else { return }
        var text = "[\(seedText), kind \(kind.rawValue)] \(message)"
        if withTrace { text += "\nlast ops (reference | \(kind.rawValue)):\n" + recent.joined(separator: "\n") }
        log("FAILURE: " + text)
        Issue.record(Comment(rawValue: text))
    }

    mutating func execute(opCount: Int, batch: Int, remountEvery: Int) throws {
        stampAll()
        while opsApplied < opCount {
            for _ in 0..<min(batch, opCount - opsApplied) {
                step()
            }
            // Once the trees differ every later op is noise: check persistence one last time and stop.
            let diverged = compareTrees(context: "after op #\(opsApplied)")
            if opsApplied % remountEvery == 0 || opsApplied == opCount || diverged {
                closeAll()
                try remountAndCompare(context: "after op #\(opsApplied)")
            }
            if diverged || issues > 30 { break }
            stampAll()
        }
        closeAll()
        for (key, count) in (effectClasses.merging(resultClasses) { a, _ in a }).sorted(by: { $0.key < $1.key })
        where count > 1 {
            print("model[\(kind.rawValue)] \(seedText): mismatch class seen \(count) times: \(key)")
        }
    }

    /// One random op on both trees; compares the results and the mtime effects.
    mutating func step() {
        let listing = ModelListing(root: reference.root)
        let op = gen.next(listing, referenceRoot: reference.root, openSlots: refFDs.keys.sorted())
        let pairs = affected(op)
        let beforeRef = pairs.map { mtime(reference.root, $0.before) }
        let beforeSub = pairs.map { mtime(subject.root, $0.before) }
        let sameSizeTruncate = isSameSizeTruncate(op)
        let rRef = op.apply(root: reference.root, fds: &refFDs)
        let rSub = op.apply(root: subject.root, fds: &subFDs)
        let mRef = mtimeEffects(root: reference.root, pairs: pairs, before: beforeRef, ok: rRef.hasPrefix("ok"))
        let mSub = mtimeEffects(root: subject.root, pairs: pairs, before: beforeSub, ok: rSub.hasPrefix("ok"))
        opsApplied += 1
        mtimeChecks += pairs.count
        if rRef.hasPrefix("ok") { successes += 1 }
        let line = "#\(opsApplied) \(op) -> \(rRef)\(mRef.text) | \(rSub)\(mSub.text)"
        recent.append(line)
        log(line)
        if recent.count > 25 { recent.removeFirst() }
        if rRef != rSub {
            // One report per kind of mismatch (op and both results, numbers blanked), counted afterwards.
            let blank = { (r: String) in String(r.map { $0.isNumber ? "#" : $0 }) }
            let key = "\(op.name): plain \(blank(rRef)), \(kind.rawValue) \(blank(rSub))"
            resultClasses[key, default: 0] += 1
            if resultClasses[key] == 1 {
                fail(
                    "op #\(opsApplied) \(op): plain directory returned \(rRef), \(kind.rawValue) returned \(rSub)",
                    withTrace: true)
            }
        } else if mRef.text != mSub.text && !(sameSizeTruncate && kind == .mount) {
            // (A truncate to the current size leaves mtime alone on FUSE with the writeback
            // cache — the kernel owns mtime and only changes it when the size changes; ext4
            // stamps it. Documented in doc/SEMANTICS.md; every other mtime effect must match.)
            // One report per kind of mismatch (op and which entry), counted afterwards.
            let key =
                "\(op.name) "
                + zip(pairs, zip(mRef.effects, mSub.effects)).filter { $0.1.0 != $0.1.1 }
                .map { "\($0.0.role): plain \($0.1.0), \(kind.rawValue) \($0.1.1)" }.joined(separator: "; ")
            effectClasses[key, default: 0] += 1
            if effectClasses[key] == 1 {
                fail(
                    "op #\(opsApplied) \(op) (\(rRef)): mtime effects differ: plain\(mRef.text) vs \(kind.rawValue)\(mSub.text)",
                    withTrace: true)
            }
        }
        updateStamps(op, ok: rRef.hasPrefix("ok"), changed: mRef.changed)
    }

    /// True for `truncate(path, n)` of a regular file whose size is already `n`.
    func isSameSizeTruncate(_ op: ModelOp) -> Bool {
        guard case .truncate(let path, let length) = op else { return false }
        var info = stat()
        guard stat(reference.root + "/" + path, &info) == 0 else { return false }
        return info.st_mode & S_IFMT == S_IFREG && Int(info.st_size) == length
    }

    struct Pair {
        var before: String
        var after: String
        var role: String
    }

    /// The stamped entries whose mtime this op may change (and where each one is after a success).
    func affected(_ op: ModelOp) -> [Pair] {
        let root = reference.root
        func around(_ p: String, follow: Bool) -> [Pair] {
            guard let r = ModelResolve.resolve(p, root: root, followLast: follow) else { return [] }
            return r.isEmpty
                ? [Pair(before: r, after: r, role: "entry")]
                : [
                    Pair(before: r, after: r, role: "entry"),
                    Pair(before: ModelSys.parent(r), after: ModelSys.parent(r), role: "parent dir"),
                ]
        }
        var pairs: [Pair]
        switch op {
        case .read, .getxattr, .fdRead, .fdStat, .fdSync, .fdClose:
            pairs = []
        case .fdWrite(let slot, _, _), .fdTruncate(let slot, _):
            // The entry the descriptor's file has now (O_CREAT opens may also change the directory, see openKeep).
            if case let p?? = slotPaths[slot] {
                pairs = [Pair(before: p, after: p, role: "entry (open descriptor)")]
            } else {
                pairs = []
            }
        case .create(let p, _, _, _, _), .write(let p, _, _), .append(let p, _), .truncate(let p, _), .chmod(let p, _):
            pairs = around(p, follow: true)
        case .openKeep(_, let p, let f, _) where f & (O_CREAT | O_TRUNC) != 0:
            pairs = around(p, follow: true)
        case .mkdir(let p, _), .rmdir(let p), .unlink(let p), .symlink(_, let p):
            pairs = around(p, follow: false)
        case .utimens(let p, _, _, let nf), .setxattr(let p, _, _, _, let nf), .removexattr(let p, _, let nf):
            pairs = around(p, follow: !nf)
        case .openKeep:
            pairs = []
        case .rename(let a, let b, _):
            let ra = ModelResolve.resolve(a, root: root, followLast: false)
            let rb = ModelResolve.resolve(b, root: root, followLast: false)
            pairs = []
            if let ra, let rb, !ra.isEmpty, !rb.isEmpty, ra != rb {
                pairs.append(Pair(before: ra, after: rb, role: "moved entry"))
            }
            for (r, role) in [(ra, "source dir"), (rb, "target dir")] {
                if let r, !r.isEmpty {
                    pairs.append(Pair(before: ModelSys.parent(r), after: ModelSys.parent(r), role: role))
                }
            }
        }
        var seen = Set<String>()
        return pairs.filter { stamped.contains($0.before) && seen.insert($0.before).inserted }
    }

    func mtime(_ root: String, _ rel: String) -> String? {
        guard let st = ModelSys.lstatOrNil(ModelSys.join(root, rel)) else { return nil }
        return "\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }

    func mtimeEffects(root: String, pairs: [Pair], before: [String?], ok: Bool) -> (
        text: String, changed: Set<String>, effects: [String]
    ) {
        guard !pairs.isEmpty else { return ("", [], []) }
        var parts: [String] = []
        var effects: [String] = []
        var changed = Set<String>()
        for (i, pair) in pairs.enumerated() {
            let after = mtime(root, ok ? pair.after : pair.before)
            let label = pair.before.isEmpty ? "." : pair.before
            let effect = after == nil ? "gone" : after == before[i] ? "same" : "changed"
            if effect == "changed" { changed.insert(pair.before) }
            effects.append(effect)
            parts.append("\(label):\(effect)")
        }
        return (" mtime[" + parts.joined(separator: " ") + "]", changed, effects)
    }

    mutating func updateStamps(_ op: ModelOp, ok: Bool, changed: Set<String>) {
        stamped.subtract(changed)
        guard ok else { return }
        let root = reference.root
        func removeSubtree(_ r: String) {
            stamped = stamped.filter { $0 != r && !$0.hasPrefix(r + "/") }
        }
        switch op {
        case .openKeep(let slot, let p, _, _):
            slotPaths[slot] = ModelResolve.resolve(p, root: root, followLast: true)
        case .fdClose(let slot):
            slotPaths[slot] = nil
        case .rmdir(let p), .unlink(let p):
            if let r = ModelResolve.resolve(p, root: root, followLast: false) {
                removeSubtree(r)
                for (slot, sp) in slotPaths where sp == r { slotPaths[slot] = .some(nil) }
            }
        case .rename(let a, let b, _):
            // The reference tree already shows the result: a is gone, b is the moved entry.
            // Resolve parents only (the last components are plain names).
            let ra = ModelResolve.resolve(ModelSys.parent(a), root: root, followLast: true).map {
                ModelSys.join($0, String(a.split(separator: "/").last ?? ""))
            }
            let rb = ModelResolve.resolve(ModelSys.parent(b), root: root, followLast: true).map {
                ModelSys.join($0, String(b.split(separator: "/").last ?? ""))
            }
            guard let ra = ra.map(Self.trimSlash), let rb = rb.map(Self.trimSlash), ra != rb else { return }
            removeSubtree(rb)
            let move = { (s: String) -> String in
                if s == ra { return rb }
                if s.hasPrefix(ra + "/") { return rb + s.dropFirst(ra.count) }
                return s
            }
            stamped = Set(stamped.map(move))
            for (slot, sp) in slotPaths {
                guard case let p?? = Optional(sp) else { continue }
                // A file replaced by the rename lives on only through its descriptors.
                slotPaths[slot] = (p == rb || p.hasPrefix(rb + "/")) ? .some(nil) : .some(move(p))
            }
        case .utimens(let p, _, let m, let nf):
            guard let r = ModelResolve.resolve(p, root: root, followLast: !nf) else { return }
            switch m {
            case .at: stamped.insert(r)
            case .now: stamped.remove(r)
            case .omit: break
            }
        default:
            break
        }
    }

    /// Closes the kept descriptors in both trees (before a remount and at the end).
    mutating func closeAll() {
        for slot in refFDs.keys.sorted() {
            let op = ModelOp.fdClose(slot: slot)
            let a = op.apply(root: reference.root, fds: &refFDs)
            let b = op.apply(root: subject.root, fds: &subFDs)
            if a != b { fail("\(op) before remount: plain directory returned \(a), \(kind.rawValue) returned \(b)") }
        }
        for (_, fd) in subFDs { close(fd) }
        subFDs = [:]
        slotPaths = [:]
    }

    static func trimSlash(_ s: String) -> String { s.hasPrefix("/") ? String(s.dropFirst()) : s }

    /// Gives every entry of both trees the same explicit times, so later mtime effects are visible.
    mutating func stampAll() {
        let listing = ModelListing(root: reference.root)
        for p in [""] + listing.all {
            let op = ModelOp.utimens(
                p, atime: ModelTime.at(stampRng.int(946_684_800...1_900_000_000), stampRng.below(1_000_000_000)),
                mtime: ModelTime.at(stampRng.int(946_684_800...1_900_000_000), stampRng.below(1_000_000_000)),
                noFollow: true)
            let a = op.apply(root: reference.root, fds: &refFDs)
            let b = op.apply(root: subject.root, fds: &subFDs)
            if a != b {
                fail("stamping times: \(op): plain directory returned \(a), \(kind.rawValue) returned \(b)")
            } else if a == "ok" {
                stamped.insert(p)
            } else {
                fail("stamping times: \(op) failed on both: \(a)")
            }
        }
    }

    /// Full comparison of the two trees; true when they differ.
    mutating func compareTrees(context: String) -> Bool {
        let a = ModelTree.snapshot(reference.root)
        let b = ModelTree.snapshot(subject.root)
        let d = ModelTree.diff(a, b, labels: ("plain", kind.rawValue), exactMtimes: stamped)
        if !d.isEmpty {
            fail(
                "trees differ \(context) (\(d.count) differences):\n" + d.prefix(40).joined(separator: "\n"),
                withTrace: true)
        }
        return !d.isEmpty
    }

    /// Unmount and mount the folder again: it must come back identical, and still match the reference.
    mutating func remountAndCompare(context: String) throws {
        let before = ModelTree.snapshot(subject.root)
        try subject.unmount()
        if kind == .mount {
            if ModelMounts.isMounted(subject.root) { fail("still mounted after unmount() \(context)") }
        }
        try subject.remount()
        remounts += 1
        let after = ModelTree.snapshot(subject.root)
        let d = ModelTree.diff(
            before, after, labels: ("before remount", "after remount"), exactMtimes: nil, compareRootMode: true)
        if !d.isEmpty {
            fail(
                "unmount + remount \(context) changed the tree (\(d.count) differences):\n"
                    + d.prefix(40).joined(separator: "\n"))
        }
        let ref = ModelTree.snapshot(reference.root)
        let d2 = ModelTree.diff(ref, after, labels: ("plain", "\(kind.rawValue) after remount"), exactMtimes: stamped)
        if !d2.isEmpty && d.isEmpty {
            fail(
                "after remount \(context) the trees differ (\(d2.count) differences):\n"
                    + d2.prefix(40).joined(separator: "\n"))
        }
    }
}
