import Foundation
import Glibc
import TestSupport

/// The operations of the churn-then-delete test, each one plain system calls
/// on the folder, as a program would make them. Most fail now and then (a name another worker
/// just removed, a folder not empty): that is the point, the churn is what races the uploads.
enum ChurnOp: String, CaseIterable, Sendable {
    /// `mkdir -p` of a chain of one to eight nested folders.
    case makeChain = "mkdir-chain"
    /// A new file with a few KiB, in a random folder.
    case createFile = "create"
    /// An existing file rewritten from the start.
    case rewrite
    case truncate
    case renameFile = "rename-file"
    /// A folder moved (with its subtree) to another folder or name.
    case moveDirectory = "move-dir"
    case unlink
    /// Succeeds only on an empty folder.
    case rmdir
    /// A whole subtree removed bottom-up (what `rm -rf` does).
    case removeTree = "rm-tree"

    var weight: Int {
        switch self {
        case .makeChain: return 14
        case .createFile: return 16
        case .rewrite: return 8
        case .truncate: return 6
        case .renameFile: return 10
        case .moveDirectory: return 8
        case .unlink: return 10
        case .rmdir: return 8
        case .removeTree: return 3
        }
    }
}

/// One worker's seeded stream of churn on a small name space (a few top folders, chains of
/// nested folders `s1/p0/d0/d1…` like the reported one), run on a thread of its own. Paths are
/// drawn from the name space, not from a listing, so workers collide on names on purpose.
final class ChurnWorker: @unchecked Sendable {
    let root: String
    let opCount: Int
    private var random: SeededGenerator
    /// Per operation, per outcome (`ok` or an errno name), how many.
    private(set) var outcomes: [ChurnOp: [String: Int]] = [:]
    /// Folders and files this worker made or moved (relative; others may have removed them since):
    /// most operations pick from these, so the churn hits what exists.
    private var knownFolders: [String] = []
    private var knownFiles: [String] = []

    init(root: String, seed: UInt64, index: Int, opCount: Int) {
        self.root = root
        self.opCount = opCount
        random = SeededGenerator(seed: seed &* 0x2545_F491_4F6C_DD1D &+ UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15)
    }

    var succeeded: Int { outcomes.values.reduce(0) { $0 + ($1["ok"] ?? 0) } }

    func run() {
        let kinds = ChurnOp.allCases
        let weights = kinds.map(\.weight)
        for _ in 0..<opCount {
            let kind = kinds[random.weighted(weights)]
            let outcome = perform(kind) ? "ok" : errnoName(errno)
            outcomes[kind, default: [:]][outcome, default: 0] += 1
            // Bursts, with short pauses that let uploads start in the middle of the churn.
            if random.chance(0.03) { usleep(UInt32(random.int(5_000...40_000))) }
        }
    }

    /// A folder path of one to `maximumDepth` levels below the root (relative).
    private func folder(maximumDepth: Int = 6) -> String {
        var components = ["s\(random.int(0...2))"]
        let depth = random.int(0...(maximumDepth - 1))
        for level in 0..<depth {
            components.append(level == 0 ? "p\(random.int(0...1))" : "d\(String(random.int(0...31), radix: 16))")
        }
        return components.joined(separator: "/")
    }

    /// A folder this worker knows of (three times in four), else one of the name space.
    private func someFolder() -> String {
        if !knownFolders.isEmpty && random.chance(0.75) {
            return knownFolders[random.int(0...(knownFolders.count - 1))]
        }
        return folder()
    }

    private func someFile() -> String {
        if !knownFiles.isEmpty && random.chance(0.75) { return knownFiles[random.int(0...(knownFiles.count - 1))] }
        return someFolder() + "/f\(random.int(0...5))"
    }

    private func remember(_ path: String, in list: inout [String]) {
        if list.count < 400 {
            list.append(path)
        } else {
            list[random.int(0...(list.count - 1))] = path
        }
    }

    private func absolute(_ relative: String) -> String { root + "/" + relative }

    private func perform(_ kind: ChurnOp) -> Bool {
        switch kind {
        case .makeChain:
            var relative = random.chance(0.5) ? someFolder() : "s\(random.int(0...2))"
            for level in 0..<random.int(1...8) {
                relative += level == 0 && !relative.contains("/") ? "/p\(random.int(0...1))" : "/d\(random.int(0...7))"
            }
            var path = root
            var made = false
            for component in relative.split(separator: "/") {
                path += "/" + component
                if mkdir(path, 0o755) == 0 {
                    made = true
                } else if errno != EEXIST {
                    return false
                }
            }
            if !made { errno = EEXIST }
            if made { remember(relative, in: &knownFolders) }
            return made
        case .createFile, .rewrite:
            let flags = kind == .createFile ? (O_WRONLY | O_CREAT | O_EXCL) : (O_WRONLY | O_TRUNC)
            let relative = kind == .createFile ? someFolder() + "/f\(random.int(0...5))" : someFile()
            let descriptor = open(absolute(relative), flags | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { return false }
            let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: random.next()), count: random.int(1...6000))
            let wrote = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            let savedErrno = errno
            close(descriptor)
            errno = savedErrno
            if wrote == bytes.count && kind == .createFile { remember(relative, in: &knownFiles) }
            return wrote == bytes.count
        case .truncate:
            return Glibc.truncate(absolute(someFile()), off_t(random.int(0...3000))) == 0
        case .renameFile:
            let target = someFolder() + "/f\(random.int(0...5))"
            guard rename(absolute(someFile()), absolute(target)) == 0 else { return false }
            remember(target, in: &knownFiles)
            return true
        case .moveDirectory:
            let target = someFolder() + "/m\(random.int(0...3))"
            guard rename(absolute(someFolder()), absolute(target)) == 0 else { return false }
            remember(target, in: &knownFolders)
            return true
        case .unlink:
            return Glibc.unlink(absolute(someFile())) == 0
        case .rmdir:
            return Glibc.rmdir(absolute(someFolder())) == 0
        case .removeTree:
            // Never a whole top folder: the churn goes on around the removed subtree.
            let folder = someFolder()
            guard folder.contains("/") else { return false }
            return removeTree(absolute(folder))
        }
    }
}

/// Removes `path` and everything below it, bottom-up, with plain system calls (`rm -rf`). True
/// if `path` is gone at the end; entries that vanish meanwhile are not errors.
@discardableResult
func removeTree(_ path: String) -> Bool {
    var status = stat()
    guard lstat(path, &status) == 0 else { return errno == ENOENT }
    if (status.st_mode & S_IFMT) == S_IFDIR {
        if let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for name in names { removeTree(path + "/" + name) }
        }
        return rmdir(path) == 0 || errno == ENOENT
    }
    return unlink(path) == 0 || errno == ENOENT
}
