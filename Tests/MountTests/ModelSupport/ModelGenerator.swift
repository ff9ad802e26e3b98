import Foundation
import Glibc
import TestSupport

/// The names present in the reference tree, used to aim operations at existing entries.
struct ModelListing {
    var all: [String] = []  // every entry except the root, sorted
    var dirs: [String] = [""]  // directories including the root
    var files: [String] = []
    var links: [String] = []
    var kinds: [String: Character] = ["": "d"]

    init(root: String) {
        let tree = ModelTree.snapshot(root, contents: false, xattrs: false)
        for (k, e) in tree.entries where !k.isEmpty {
            all.append(k)
            kinds[k] = e.kind
            switch e.kind {
            case "d": dirs.append(k)
            case "f": files.append(k)
            case "l": links.append(k)
            default: break
            }
        }
        all.sort()
        dirs.sort()
        files.sort()
        links.sort()
    }

    static func depth(_ rel: String) -> Int { rel.isEmpty ? 0 : rel.split(separator: "/").count }
}

/// Draws random operations from a seeded generator, aimed mostly at existing entries.
struct ModelGenerator {
    var rng: SeededGenerator

    static let longName = String(repeating: "n", count: 255)
    static let tooLongName = String(repeating: "m", count: 256)
    static let names = ["a", "b", "c", "d", "e", "f", "g", "h", "with space", "ünï©ødé", ".hidden", "x.tmp"]
    // Symlink targets never contain "..", so following one never leaves the tree.
    static let targets = [
        "a", "b", "c", "d/e", "a/b", "with space", "/nonexistent-syncfs-model/x",
        String(repeating: "t", count: 300), "loop",
    ]
    static let xattrNames = ["user.a", "user.b", "user.model.with.dots", "user." + String(repeating: "k", count: 200)]
    static let createModes: [mode_t] = [0o644, 0o666, 0o600, 0o755, 0o777, 0o444, 0o400]
    static let chmodModes: [mode_t] = [0o644, 0o600, 0o755, 0o700, 0o444, 0o000, 0o777, 0o4755, 0o2755, 0o1777, 0o640]
    static let dirModes: [mode_t] = [0o755, 0o777, 0o700, 0o555, 0o1777]

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    mutating func name() -> String {
        let r = rng.below(200)
        if r == 0 { return Self.tooLongName }
        if r == 1 { return Self.longName }
        return rng.pick(Self.names)
    }

    mutating func fresh(_ l: ModelListing) -> String {
        let parents = l.dirs.filter { ModelListing.depth($0) < 3 }
        let parent = parents.isEmpty ? "" : rng.pick(parents)
        let n = name()
        return parent.isEmpty ? n : parent + "/" + n
    }

    mutating func existing(_ xs: [String], _ l: ModelListing) -> String {
        xs.isEmpty ? fresh(l) : rng.pick(xs)
    }

    /// A path: existing entry of the preferred list with probability p, otherwise any entry or a fresh name.
    mutating func path(_ preferred: [String], p: Double, _ l: ModelListing) -> String {
        if rng.chance(p) { return existing(preferred, l) }
        return rng.chance(0.5) ? existing(l.all, l) : fresh(l)
    }

    mutating func data() -> ModelData {
        let r = rng.below(100)
        let count: Int
        if r < 70 {
            count = rng.int(1...4096)
        } else if r < 92 {
            count = rng.int(4097...70_000)
        } else {
            count = rng.int(70_001...300_000)
        }
        return ModelData(seed: rng.next(), count: count)
    }

    mutating func time() -> ModelTime {
        let r = rng.below(100)
        if r < 3 { return .now }
        if r < 6 { return .omit }
        let sec = r < 10 ? rng.int(2_147_483_648...4_000_000_000) : rng.int(946_684_800...1_900_000_000)
        return .at(sec, rng.below(1_000_000_000))
    }

    mutating func explicitTime() -> ModelTime {
        .at(rng.int(946_684_800...1_900_000_000), rng.below(1_000_000_000))
    }

    mutating func size(of rel: String, root: String) -> Int {
        Int(ModelSys.lstatOrNil(ModelSys.join(root, rel))?.st_size ?? 0)
    }

    static let slots = 4

    mutating func next(_ l: ModelListing, referenceRoot root: String, openSlots: [Int]) -> ModelOp {
        //               create write append trunc read mkdir rmdir unlink rename symlink chmod utimens setx rmx getx fd
        let weights = [12, 12, 6, 6, 6, 8, 5, 6, 12, 5, 5, 8, 6, 2, 2, 14]
        switch rng.weighted(weights) {
        case 15:
            let free = (0..<Self.slots).filter { !openSlots.contains($0) }
            if openSlots.isEmpty || (!free.isEmpty && rng.chance(0.25)) {
                let r = rng.below(100)
                var flags: Int32 = r < 60 ? O_RDWR : r < 80 ? O_WRONLY : O_RDONLY
                if rng.chance(0.5) { flags |= O_CREAT }
                if rng.chance(0.1) { flags |= O_TRUNC }
                if rng.chance(0.15) { flags |= O_APPEND }
                if rng.chance(0.05) { flags |= O_EXCL }
                let p = rng.chance(0.7) ? existing(l.files, l) : rng.chance(0.6) ? fresh(l) : existing(l.all, l)
                return .openKeep(
                    slot: rng.pick(free.isEmpty ? Array(0..<Self.slots) : free), p, flags: flags,
                    mode: rng.pick(Self.createModes))
            }
            let slot = rng.pick(openSlots)
            switch rng.weighted([30, 15, 10, 10, 5, 12]) {
            case 0:
                return .fdWrite(
                    slot: slot, offset: rng.chance(0.8) ? rng.int(0...70_000) : rng.int(0...1_000_000), data: data())
            case 1: return .fdRead(slot: slot, offset: rng.int(0...70_000), length: rng.int(1...100_000))
            case 2:
                return .fdTruncate(slot: slot, length: rng.chance(0.8) ? rng.int(0...70_000) : rng.int(0...1_000_000))
            case 3: return .fdStat(slot: slot)
            case 4: return .fdSync(slot: slot)
            default: return .fdClose(slot: slot)
            }
        case 0:
            let p = rng.chance(0.5) ? existing(l.files, l) : rng.chance(0.2) ? existing(l.all, l) : fresh(l)
            let d = rng.chance(0.1) ? ModelData(seed: rng.next(), count: 0) : data()
            return .create(p, excl: rng.chance(0.2), trunc: rng.chance(0.5), mode: rng.pick(Self.createModes), data: d)
        case 1:
            let p = path(l.files + l.links, p: 0.85, l)
            let sz = size(of: p, root: root)
            let r = rng.below(100)
            let off = r < 60 ? rng.int(0...max(sz, 0)) : r < 90 ? rng.int(0...(sz + 8192)) : rng.int(0...1_000_000)
            return .write(p, offset: off, data: data())
        case 2:
            return .append(path(l.files + l.links, p: 0.85, l), data: data())
        case 3:
            let p = path(l.files + l.links, p: 0.85, l)
            let sz = size(of: p, root: root)
            let r = rng.below(100)
            let len =
                r < 50
                ? rng.int(0...max(sz, 0)) : r < 80 ? rng.int(sz...(sz + 10_000)) : r < 90 ? 0 : rng.int(0...2_000_000)
            return .truncate(p, length: len)
        case 4:
            let p = path(l.files + l.links, p: 0.85, l)
            let sz = size(of: p, root: root)
            return .read(p, offset: rng.int(0...(sz + 100)), length: rng.int(1...200_000))
        case 5:
            return .mkdir(rng.chance(0.8) ? fresh(l) : existing(l.all, l), mode: rng.pick(Self.dirModes))
        case 6:
            return .rmdir(path(Array(l.dirs.dropFirst()), p: 0.7, l))
        case 7:
            return .unlink(path(l.files + l.links, p: 0.6, l))
        case 8:
            let src = rng.chance(0.85) ? existing(l.all, l) : fresh(l)
            let dst: String
            if rng.chance(0.4) {
                // Over an existing target of the same kind most of the time.
                let kind = l.kinds[src]
                let same = l.all.filter { l.kinds[$0] == kind }
                dst = rng.chance(0.7) ? existing(same, l) : existing(l.all, l)
            } else {
                dst = fresh(l)
            }
            return .rename(src, dst, noReplace: rng.chance(0.1))
        case 9:
            return .symlink(target: rng.pick(Self.targets), rng.chance(0.85) ? fresh(l) : existing(l.all, l))
        case 10:
            return .chmod(existing(l.all, l), mode: rng.pick(Self.chmodModes))
        case 11:
            let p = rng.chance(0.05) ? "" : existing(l.all, l)
            return .utimens(p, atime: time(), mtime: time(), noFollow: rng.chance(0.5))
        case 12:
            let p = rng.chance(0.05) ? "" : existing(l.all, l)
            let flags: Int32 = rng.chance(0.7) ? 0 : rng.chance(0.5) ? ModelConst.xattrCreate : ModelConst.xattrReplace
            let v = ModelData(seed: rng.next(), count: rng.chance(0.1) ? 0 : rng.int(1...300))
            return .setxattr(p, name: rng.pick(Self.xattrNames), value: v, flags: flags, noFollow: rng.chance(0.5))
        case 13:
            return .removexattr(existing(l.all, l), name: rng.pick(Self.xattrNames), noFollow: rng.chance(0.5))
        default:
            return .getxattr(existing(l.all, l), name: rng.pick(Self.xattrNames), noFollow: rng.chance(0.5))
        }
    }
}

/// Resolves a relative path inside a tree the way the kernel would, following symlinks
/// (targets never contain "..", so the result stays inside). nil: it leaves the tree or loops.
enum ModelResolve {
    static func resolve(_ rel: String, root: String, followLast: Bool) -> String? {
        var done: [String] = []
        var queue = rel.split(separator: "/").map(String.init)
        var hops = 0
        while !queue.isEmpty {
            let c = queue.removeFirst()
            let candidate = (done + [c]).joined(separator: "/")
            if let st = ModelSys.lstatOrNil(ModelSys.join(root, candidate)), st.st_mode & S_IFMT == S_IFLNK,
                !queue.isEmpty || followLast
            {
                hops += 1
                guard hops <= 40, let t = ModelSys.readLink(ModelSys.join(root, candidate)), !t.hasPrefix("/"),
                    !t.isEmpty
                else {
                    return nil
                }
                queue = t.split(separator: "/").map(String.init) + queue
                continue
            }
            done.append(c)
        }
        return done.joined(separator: "/")
    }
}
