import Foundation
import Glibc
import TestSupport
import Testing

/// A container that already holds many entries, for the first-mount attach tests: a plain
/// tree is written under a temporary directory, its directories get distinct old mtimes and
/// modes, and `syncfs-bench seed-container` copies it into a local
/// container through the `Container` API (the uploader's way, without a mount). With `onTmpfs`
/// the container lives on a small tmpfs mounted for the fixture (every container commit is an
/// fsync: 14,000 of them take seconds on tmpfs, much longer on a disk); `tearDown` unmounts it.
final class AttachFixture {
    let baseDir: String
    /// The plain tree the container was seeded from (the expected names, modes and times).
    let source: String
    let container: String
    /// The relative paths of every entry (directories and files), sorted.
    let entries: [String]
    /// The relative paths of the directories.
    let directories: [String]
    private let tmpfs: String?

    private init(
        baseDir: String, source: String, container: String, entries: [String], directories: [String], tmpfs: String?
    ) {
        self.baseDir = baseDir
        self.source = source
        self.container = container
        self.entries = entries
        self.directories = directories
        self.tmpfs = tmpfs
    }

    /// `directories` top-level directories `d000…`, each with `filesPerDirectory` files `f000…`
    /// (every tenth holds a few bytes, the others are empty) and, every fifth, a nested directory
    /// `d000/sub` with two files. Each directory's mtime is a distinct time in 2001 with
    /// nanoseconds, its mode one of 0755, 0750, 0700.
    static func make(directories count: Int, filesPerDirectory: Int, onTmpfs: Bool) throws -> AttachFixture {
        umask(0o022)
        let base = try makeTemporaryDirectory("syncfs-attach")
        var tmpfs: String?
        do {
            let source = base + "/source"
            try makeDirectory(source)
            var entries: [String] = []
            var directories: [String] = []
            for index in 0..<count {
                let directory = String(format: "d%03d", index)
                try makeDirectory(source + "/" + directory)
                directories.append(directory)
                entries.append(directory)
                for file in 0..<filesPerDirectory {
                    let path = directory + String(format: "/f%03d", file)
                    try writeFile(source + "/" + path, file % 10 == 0 ? "content of \(path)\n" : "")
                    entries.append(path)
                }
                if index % 5 == 0 {
                    let nested = directory + "/sub"
                    try makeDirectory(source + "/" + nested)
                    directories.append(nested)
                    entries.append(nested)
                    for file in ["x", "y"] {
                        try writeFile(source + "/" + nested + "/" + file, "")
                        entries.append(nested + "/" + file)
                    }
                }
            }
            // Deepest first, so a parent's time is set after its children changed.
            for (number, directory) in directories.enumerated().reversed() {
                let path = source + "/" + directory
                try posix("chmod(\(path))") { chmod(path, expectedMode(number)) }
                var times = [expectedTime(number), expectedTime(number)]
                try posix("utimensat(\(path))") { utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) }
            }
            var containerParent = base
            if onTmpfs {
                let point = base + "/tmpfs"
                try makeDirectory(point)
                let mounted = ModelProcess.run(["mount", "-t", "tmpfs", "-o", "size=512m,mode=0700", "tmpfs", point])
                guard mounted.ok else { throw TestFolderError(message: "mount tmpfs: \(mounted)") }
                tmpfs = point
                containerParent = point
            }
            let container = containerParent + "/container"
            let seeded = ModelProcess.run(
                [try TestFolder.benchBinaryPath(), "seed-container", source, container, "--jobs", "4"], timeout: 300)
            guard seeded.ok else { throw TestFolderError(message: "seed-container: \(seeded)") }
            return AttachFixture(
                baseDir: base, source: source, container: container, entries: entries.sorted(),
                directories: directories, tmpfs: tmpfs)
        } catch {
            if let tmpfs { _ = ModelProcess.run(["umount", "-l", tmpfs]) }
            try? FileManager.default.removeItem(atPath: base)
            throw error
        }
    }

    /// The mtime given to the `number`th directory: distinct, old, with nanoseconds.
    static func expectedTime(_ number: Int) -> timespec {
        timespecOf(seconds: 978_307_200 + number * 3_607, nanoseconds: 123_456_789 - number * 1_001)
    }

    static func expectedMode(_ number: Int) -> mode_t { [0o755, 0o750, 0o700][number % 3] }

    /// Unmounts the tmpfs (if any) and removes everything. Call after the mounts of the
    /// container are torn down.
    func tearDown() {
        if let tmpfs {
            let result = ModelProcess.run(["umount", tmpfs])
            if !result.ok { _ = ModelProcess.run(["umount", "-l", tmpfs]) }
        }
        try? FileManager.default.removeItem(atPath: baseDir)
    }
}

/// Every entry below `root`, as relative paths, sorted (a plain recursive walk with readdir).
func walkTree(_ root: String) throws -> [String] {
    var found: [String] = []
    var pending = [""]
    while let relative = pending.popLast() {
        for name in try listDirectory(relative.isEmpty ? root : root + "/" + relative) {
            let path = relative.isEmpty ? name : relative + "/" + name
            found.append(path)
            if isDirectory(try lstatPath(root + "/" + path)) { pending.append(path) }
        }
    }
    return found.sorted()
}

/// What a directory shows that must be the container's: mode bits, mtime, `user.` attributes.
struct DirectoryLook: Equatable, CustomStringConvertible {
    var mode: mode_t
    var mtimeSeconds: Int
    var mtimeNanoseconds: Int
    var xattrs: [String: [UInt8]]

    init(_ path: String) throws {
        let info = try lstatPath(path)
        mode = permissions(info)
        mtimeSeconds = info.st_mtim.tv_sec
        mtimeNanoseconds = info.st_mtim.tv_nsec
        var values: [String: [UInt8]] = [:]
        for name in try listXattrs(path) where name.hasPrefix("user.") && !name.hasPrefix("user.syncfs.") {
            values[name] = try getXattr(path, name)
        }
        xattrs = values
    }

    var description: String {
        "mode \(String(mode, radix: 8)), mtime \(mtimeSeconds).\(mtimeNanoseconds), xattrs \(xattrs.keys.sorted())"
    }
}
