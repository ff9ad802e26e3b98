import Foundation
import Glibc
import Testing

/// Everything survives an unmount and a remount; concurrent open/close/unlink churn leaves the
/// mount healthy.
@Suite("POSIX persistence and concurrency")
struct PosixSuitePersistence {
    /// What a tree looks like: per path, type, mode, size, mtime, content / link target, user.test xattrs.
    struct Entry: Equatable, CustomStringConvertible {
        var type: mode_t
        var mode: mode_t
        var size: off_t
        var mtimeSeconds: Int
        var mtimeNanoseconds: Int
        var content: [UInt8]?
        var linkTarget: String?
        var xattrs: [String: [UInt8]]

        /// The fields that differ from `other`, as "field: mine → other".
        func differences(to other: Entry?) -> String {
            guard let other else { return "missing after remount" }
            var result: [String] = []
            if type != other.type { result.append("type \(String(type, radix: 8)) → \(String(other.type, radix: 8))") }
            if mode != other.mode { result.append("mode \(String(mode, radix: 8)) → \(String(other.mode, radix: 8))") }
            if size != other.size { result.append("size \(size) → \(other.size)") }
            if mtimeSeconds != other.mtimeSeconds || mtimeNanoseconds != other.mtimeNanoseconds {
                result.append(
                    "mtime \(mtimeSeconds).\(mtimeNanoseconds) → \(other.mtimeSeconds).\(other.mtimeNanoseconds)")
            }
            if content != other.content {
                let firstDifference = zip(content ?? [], other.content ?? []).enumerated().first {
                    $0.element.0 != $0.element.1
                }
                result.append(
                    "content differs (\(content?.count ?? 0) → \(other.content?.count ?? 0) bytes, first differing byte at \(firstDifference.map { String($0.offset) } ?? "the end"))"
                )
            }
            if linkTarget != other.linkTarget {
                result.append("link \(linkTarget ?? "-") → \(other.linkTarget ?? "-")")
            }
            if xattrs != other.xattrs {
                result.append("xattrs \(xattrs.keys.sorted()) → \(other.xattrs.keys.sorted()) (or values differ)")
            }
            return result.joined(separator: "; ")
        }

        var description: String {
            "type \(String(type, radix: 8)) mode \(String(mode, radix: 8)) size \(size) mtime \(mtimeSeconds).\(mtimeNanoseconds) "
                + "content \(content.map { "\($0.count) bytes" } ?? "-") link \(linkTarget ?? "-") xattrs \(xattrs.keys.sorted())"
        }
    }

    static func snapshot(_ root: String) throws -> [String: Entry] {
        var result: [String: Entry] = [:]
        func visit(_ relative: String) throws {
            let path = relative.isEmpty ? root : root + "/" + relative
            for name in try listDirectory(path) {
                let child = relative.isEmpty ? name : relative + "/" + name
                let full = root + "/" + child
                let info = try lstatPath(full)
                var entry = Entry(
                    type: fileType(info), mode: permissions(info), size: isDirectory(info) ? 0 : info.st_size,
                    mtimeSeconds: info.st_mtim.tv_sec, mtimeNanoseconds: info.st_mtim.tv_nsec,
                    content: nil, linkTarget: nil, xattrs: [:])
                if isRegular(info) {
                    if info.st_size > 64 << 20 {
                        // Big sparse files: the head and the tail are enough.
                        entry.content = try withFile(full, O_RDONLY) { fd throws in
                            try preadBytes(fd, count: 65536, offset: 0)
                                + preadBytes(fd, count: 65536, offset: info.st_size - 65536)
                        }
                    } else {
                        entry.content = try readFile(full)
                    }
                }
                if isSymlink(info) {
                    entry.linkTarget = try readLink(full)
                } else {
                    for attribute in try listXattrs(full) where attribute.hasPrefix("user.test.") {
                        entry.xattrs[attribute] = try getXattr(full, attribute)
                    }
                }
                result[child] = entry
                if isDirectory(info) { try visit(child) }
            }
        }
        try visit("")
        return result
    }

    static func populate(_ root: String) throws {
        func path(_ relative: String) -> String { root + "/" + relative }
        try makeDirectory(path("docs"))
        try makeDirectory(path("docs/deep"), mode: 0o700)
        try makeDirectory(path("docs/deep/deeper"))
        try makeDirectory(path("empty-dir"))
        try writeFile(path("docs/readme.txt"), "read me\n")
        try writeFile(path("docs/deep/big.bin"), patternBytes(count: 1_500_000, seed: 42), mode: 0o640)
        try writeFile(path("docs/deep/deeper/leaf"), "leaf")
        try writeFile(path("empty-file"), [UInt8]())
        try writeFile(path("exec.sh"), "#!/bin/sh\necho hi\n", mode: 0o755)
        try writeFile(path(String(repeating: "n", count: 255)), "long name")
        try writeFile(path("ünïcødé name.txt"), "unicode")
        try makeSymlink(target: "docs/readme.txt", at: path("link-to-readme"))
        try makeSymlink(target: "nowhere/at/all", at: path("docs/dangling"))
        try setXattr(path("docs/readme.txt"), "user.test.color", bytes("blue"))
        try setXattr(path("docs/readme.txt"), "user.test.binary", [0, 1, 2, 0, 255])
        try setXattr(path("docs"), "user.test.on-dir", bytes("directory attribute"))
        // A sparse tail, an overwritten middle, a truncated file.
        try withFile(path("docs/deep/big.bin"), O_RDWR) { fd throws in
            try pwriteBytes(fd, bytes("PATCHED"), offset: 700_000)
            try pwriteBytes(fd, bytes("TAIL"), offset: 3_000_000)
        }
        try writeFile(path("shrunk"), patternBytes(count: 100_000, seed: 5))
        try posix("truncate") { truncate(path("shrunk"), 1000) }
        // Renamed and deleted entries must stay that way.
        try writeFile(path("before-rename"), "renamed")
        try posix("rename") { rename(path("before-rename"), path("docs/after-rename")) }
        try writeFile(path("deleted"), "gone")
        try posix("unlink") { unlink(path("deleted")) }
        // A shared mapping written and unmapped without msync: munmap + close must be enough.
        try writeFile(path("mapped"), patternBytes(count: 20_000, seed: 8))
        try withFile(path("mapped"), O_RDWR) { fd throws in
            guard let mapping = mmap(nil, 20_000, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapping != MAP_FAILED
            else {
                throw PosixError(code: errno, operation: "mmap")
            }
            let view = mapping.assumingMemoryBound(to: UInt8.self)
            for offset in stride(from: 0, to: 20_000, by: 997) { view[offset] = 0xEE }
            usleep(100_000)  // as a program would: the pages are written back later than the fault
            try posix("munmap") { munmap(mapping, 20_000) }
        }
        // Swapped by RENAME_EXCHANGE; a directory moved with its children.
        try writeFile(path("swap-a"), "A")
        try writeFile(path("swap-b"), "B")
        try posix("renameat2(EXCHANGE)") { Linux.renameat2(path("swap-a"), path("swap-b"), Linux.renameExchange) }
        try posix("rename(dir)") { rename(path("docs/deep/deeper"), path("moved-deeper")) }
        // Times and mode set on the open descriptor after writing (the tar pattern).
        try withFile(path("extracted"), O_WRONLY | O_CREAT | O_EXCL) { fd throws in
            try writeAll(fd, patternBytes(count: 50_000, seed: 6))
            var stamp = [
                timespecOf(seconds: 1_300_000_000, nanoseconds: 7), timespecOf(seconds: 1_300_000_000, nanoseconds: 8),
            ]
            try posix("futimens") { futimens(fd, &stamp) }
            try posix("fchmod") { fchmod(fd, 0o600) }
        }
        // Allocated space, and a sparse file past 4 GiB.
        try withFile(path("allocated"), O_RDWR | O_CREAT) { fd throws in
            try posix("fallocate") { Linux.fallocate(fd, 0, 0, 300_000) }
        }
        try withFile(path("sparse"), O_RDWR | O_CREAT) { fd throws in
            try pwriteBytes(fd, bytes("end"), offset: 5 << 30)
        }
        // Exact times, set last (after every write).
        var times = [
            timespecOf(seconds: 1_400_000_000, nanoseconds: 111_222_333),
            timespecOf(seconds: 1_500_000_000, nanoseconds: 444_555_666),
        ]
        try posix("utimensat") { utimensat(AT_FDCWD, path("docs/readme.txt"), &times, 0) }
        try posix("utimensat") { utimensat(AT_FDCWD, path("empty-dir"), &times, 0) }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func everythingSurvivesUnmountAndRemount(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try Self.populate(folder.root)
            let before = try Self.snapshot(folder.root)
            #expect(before.count == 21, "populated entries: \(before.keys.sorted())")
            #expect(before["swap-a"]?.content == bytes("B") && before["swap-b"]?.content == bytes("A"))
            #expect(before["sparse"]?.size == (5 << 30) + 3)
            #expect(before["moved-deeper/leaf"]?.content == bytes("leaf"))
            #expect(before["deleted"] == nil && before["before-rename"] == nil)
            #expect(before["docs/readme.txt"]?.mtimeNanoseconds == 444_555_666)

            try folder.unmount()
            if kind == .mount { #expect(!TestFolder.isMounted(folder.root)) }
            try folder.remount()

            let after = try Self.snapshot(folder.root)
            #expect(
                Set(after.keys) == Set(before.keys), "same names: \(Set(after.keys).symmetricDifference(before.keys))")
            for (path, entry) in before.sorted(by: { $0.key < $1.key }) {
                #expect(
                    after[path] == entry,
                    "\(path) changed across unmount/remount: \(entry.differences(to: after[path]))")
            }

            // A second cycle, after more changes made on the remounted folder.
            try writeFile(folder.path("docs/readme.txt"), "changed after remount")
            try posix("unlink") { unlink(folder.path("moved-deeper/leaf")) }
            let changed = try Self.snapshot(folder.root)
            try folder.unmount()
            try folder.remount()
            let again = try Self.snapshot(folder.root)
            #expect(Set(again.keys) == Set(changed.keys))
            for (path, entry) in changed.sorted(by: { $0.key < $1.key }) {
                #expect(
                    again[path] == entry,
                    "\(path) changed across the second unmount/remount: \(entry.differences(to: again[path]))")
            }
        }
    }

    /// Several threads churn on the same few names; only ENOENT / EEXIST races are acceptable.
    @Test(arguments: TestFolder.Kind.allCases)
    func reopenStorm(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let names = (0..<4).map { folder.path("storm-\($0)") }
            let threads = 6
            let duration: Double = 3
            let results = StormResults()
            let done = DispatchSemaphore(value: 0)

            for worker in 0..<threads {
                Thread.detachNewThread {
                    var random = SystemRandomNumberGenerator()
                    var local: [String] = []
                    var count = 0
                    let payload = patternBytes(count: 2000, seed: UInt64(worker + 1))
                    let deadline = Date().addingTimeInterval(duration)
                    func check(_ result: some BinaryInteger, _ what: String) {
                        let code = errno
                        count += 1
                        if result == -1 && code != ENOENT && code != EEXIST && local.count < 20 {
                            local.append("\(what): \(errnoName(code))")
                        }
                    }
                    while Date() < deadline {
                        let name = names[Int.random(in: 0..<names.count, using: &random)]
                        switch Int.random(in: 0..<7, using: &random) {
                        case 0, 1:
                            let fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
                            check(fd, "open(O_CREAT) \(name)")
                            if fd >= 0 {
                                check(payload.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }, "write")
                                check(close(fd), "close")
                            }
                        case 2:
                            let fd = open(name, O_RDONLY | O_CLOEXEC)
                            check(fd, "open(O_RDONLY) \(name)")
                            if fd >= 0 {
                                var buffer = [UInt8](repeating: 0, count: 4096)
                                check(read(fd, &buffer, buffer.count), "read")
                                var info = stat()
                                check(fstat(fd, &info), "fstat")
                                check(close(fd), "close")
                            }
                        case 3:
                            var info = stat()
                            check(stat(name, &info), "stat \(name)")
                        case 4:
                            check(unlink(name), "unlink \(name)")
                        case 5:
                            let fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, 0o644)
                            check(fd, "open(O_EXCL) \(name)")
                            if fd >= 0 { check(close(fd), "close") }
                        default:
                            let other = names[Int.random(in: 0..<names.count, using: &random)]
                            check(rename(name, other), "rename \(name) \(other)")
                        }
                    }
                    results.add(local, count)
                    done.signal()
                }
            }
            for _ in 0..<threads { done.wait() }

            let (found, total) = results.values
            #expect(found.isEmpty, "unexpected errors during the storm: \(found.prefix(20))")
            #expect(total > 1000, "the storm actually ran (\(total) operations)")

            // The folder still works and holds only what the storm could have left.
            let left = try listDirectory(folder.root)
            #expect(Set(left).isSubset(of: names.map { ($0 as NSString).lastPathComponent }), "left: \(left)")
            for name in left {
                let content = try readFile(folder.path(name))
                #expect(
                    content.count == 0 || content.count == 2000,
                    "every write was 2000 bytes at 0: \(name) has \(content.count)")
                try posix("unlink \(name)") { unlink(folder.path(name)) }
            }
            #expect(try listDirectory(folder.root).isEmpty)
            try writeFile(folder.path("after-storm"), "still fine")
            #expect(try readText(folder.path("after-storm")) == "still fine")
            if kind == .mount, let pid = folder.daemonPID {
                #expect(kill(pid, 0) == 0, "the daemon is alive after the storm")
            }
        }
    }
}

/// What the storm threads found.
private final class StormResults: @unchecked Sendable {
    private let lock = NSLock()
    private var problems: [String] = []
    private var operations = 0

    func add(_ found: [String], _ count: Int) {
        lock.withLock {
            problems += found
            operations += count
        }
    }

    var values: ([String], Int) { lock.withLock { (problems, operations) } }
}
