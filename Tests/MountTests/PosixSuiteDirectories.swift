import Foundation
import Glibc
import Testing

/// Directories and names: big listings, name length limits, and the errno of each misuse.
@Suite("POSIX directories and names")
struct PosixSuiteDirectories {
    @Test(arguments: TestFolder.Kind.allCases)
    func tenThousandEntriesListedCompletelyAndStably(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let directory = folder.path("big")
            try makeDirectory(directory)
            // Names of varying length, so readdir buffers fill at odd boundaries.
            let names = (0..<10_000).map { index in
                "entry-\(index)-" + String(repeating: "n", count: index % 61)
            }
            for name in names {
                let fd = try posix("create \(name)") {
                    open(directory + "/" + name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                }
                close(fd)
            }
            try makeDirectory(directory + "/a-subdirectory")
            let expected = Set(names + ["a-subdirectory"])

            let first = try listDirectory(directory)
            #expect(first.count == 10_001, "every entry listed (got \(first.count))")
            let duplicates = Dictionary(grouping: first, by: { $0 }).filter { $0.value.count > 1 }.keys
            #expect(duplicates.isEmpty, "no name listed twice: \(duplicates.prefix(5))")
            #expect(Set(first) == expected, "missing: \(expected.subtracting(first).prefix(5))")

            let second = try listDirectory(directory)
            #expect(second == first, "two listings of an unchanged directory are identical")

            // Through one open handle: read part, rewind, read all; then seekdir back to a telldir mark.
            guard let handle = opendir(directory) else { throw PosixError(code: errno, operation: "opendir") }
            defer { closedir(handle) }
            func nextName() -> String? {
                guard let entry = readdir(handle) else { return nil }
                return entry.entryName
            }
            for _ in 0..<1234 { _ = nextName() }
            rewinddir(handle)
            var rewound: [String] = []
            var mark = 0
            var afterMark: [String] = []
            while let name = nextName() {
                if name == "." || name == ".." { continue }
                rewound.append(name)
                if rewound.count == 5000 { mark = telldir(handle) }
                if rewound.count > 5000 { afterMark.append(name) }
            }
            #expect(rewound == first, "rewinddir then reading gives the same listing")
            seekdir(handle, mark)
            var resumed: [String] = []
            while let name = nextName() {
                if name != "." && name != ".." { resumed.append(name) }
            }
            #expect(resumed == afterMark, "seekdir to a telldir mark resumes at the same entry")

            // Removing half keeps the listing exact.
            for name in names.enumerated().filter({ $0.offset % 2 == 0 }).map(\.element) {
                try posix("unlink \(name)") { unlink(directory + "/" + name) }
            }
            let third = try listDirectory(directory)
            #expect(third.count == 5_001)
            #expect(
                Set(third) == Set(names.enumerated().filter { $0.offset % 2 == 1 }.map(\.element) + ["a-subdirectory"]))
        }
    }

    /// Names that exist for the whole listing appear exactly once, even while others are added
    /// and removed between readdir calls.
    @Test(arguments: TestFolder.Kind.allCases)
    func listingWhileTheDirectoryChanges(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let directory = folder.path("changing")
            try makeDirectory(directory)
            let stable = (0..<3000).map { "stable-\($0)" }
            for name in stable { try writeFile(directory + "/" + name, [UInt8]()) }
            let doomed = (0..<1000).map { "doomed-\($0)" }
            for name in doomed { try writeFile(directory + "/" + name, [UInt8]()) }

            guard let handle = opendir(directory) else { throw PosixError(code: errno, operation: "opendir") }
            defer { closedir(handle) }
            var seen: [String] = []
            var step = 0
            while let entry = readdir(handle) {
                let name = entry.entryName
                seen.append(name)
                step += 1
                if step % 100 == 0 && step / 100 <= 20 {
                    // Churn between reads: add ten names, remove fifty of the doomed ones.
                    for index in 0..<10 { try writeFile(directory + "/added-\(step)-\(index)", [UInt8]()) }
                    for name in doomed[((step / 100 - 1) * 50)..<((step / 100) * 50)] {
                        try posix("unlink \(name)") { unlink(directory + "/" + name) }
                    }
                }
            }
            let counts = Dictionary(grouping: seen, by: { $0 }).mapValues(\.count)
            let missing = stable.filter { counts[$0] == nil }
            let repeated = counts.filter { $0.value > 1 }.keys.sorted()
            #expect(
                missing.isEmpty, "names present throughout were not listed: \(missing.prefix(5)) (\(missing.count))")
            #expect(repeated.isEmpty, "names listed more than once: \(repeated.prefix(5)) (\(repeated.count))")
            #expect(counts["."] == 1 && counts[".."] == 1)
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func listingReflectsChanges(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            #expect(try listDirectory(folder.root).isEmpty)
            try writeFile(folder.path("f"), "f")
            try makeDirectory(folder.path("d"))
            try makeSymlink(target: "f", at: folder.path("l"))
            #expect(try listDirectory(folder.root).sorted() == ["d", "f", "l"])
            // d_type is right for each kind of entry.
            guard let handle = opendir(folder.root) else { throw PosixError(code: errno, operation: "opendir") }
            defer { closedir(handle) }
            var types: [String: UInt8] = [:]
            while let entry = readdir(handle) {
                let name = entry.entryName
                types[name] = entry.pointee.d_type
            }
            #expect(types["f"] == UInt8(DT_REG))
            #expect(types["d"] == UInt8(DT_DIR))
            #expect(types["l"] == UInt8(DT_LNK))
            #expect(types["."] == UInt8(DT_DIR) && types[".."] == UInt8(DT_DIR), "readdir lists . and ..")
            try posix("unlink(f)") { unlink(folder.path("f")) }
            try posix("rmdir(d)") { rmdir(folder.path("d")) }
            #expect(try listDirectory(folder.root) == ["l"])
            expectErrno(ENOENT, "rmdir(d) twice") { rmdir(folder.path("d")) }
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func nameLengthLimits(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let longest = String(repeating: "a", count: 255)
            try writeFile(folder.path(longest), "255")
            #expect(try readText(folder.path(longest)) == "255")
            #expect(try listDirectory(folder.root).contains(longest))
            // 255 bytes of multi-byte UTF-8 (127 × "é" + "x").
            let unicode = String(repeating: "é", count: 127) + "x"
            #expect(unicode.utf8.count == 255)
            try makeDirectory(folder.path(unicode))
            #expect(try listDirectory(folder.root).contains(unicode))
            try posix("rename to 255-byte name") { rename(folder.path(longest), folder.path(unicode + "/" + longest)) }
            #expect(try readText(folder.path(unicode + "/" + longest)) == "255")

            let tooLong = String(repeating: "b", count: 256)
            expectErrno(ENAMETOOLONG, "open(256-byte name, O_CREAT)") {
                open(folder.path(tooLong), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            }
            expectErrno(ENAMETOOLONG, "mkdir(256-byte name)") { mkdir(folder.path(tooLong), 0o755) }
            expectErrno(ENAMETOOLONG, "symlink(256-byte name)") { symlink("x", folder.path(tooLong)) }
            expectErrno(ENAMETOOLONG, "lstat(256-byte name)") {
                var info = stat()
                return lstat(folder.path(tooLong), &info)
            }
            expectErrno(ENAMETOOLONG, "rename(to a 256-byte name)") {
                rename(folder.path(unicode), folder.path(tooLong))
            }
            #expect(try listDirectory(folder.root) == [unicode])
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func directoryErrnos(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try makeDirectory(folder.path("dir"))
            try writeFile(folder.path("dir/child"), "c")
            try writeFile(folder.path("file"), "f")

            // ENOTEMPTY
            expectErrno(ENOTEMPTY, "rmdir(non-empty)") { rmdir(folder.path("dir")) }
            #expect(try listDirectory(folder.path("dir")) == ["child"])

            // EISDIR
            expectErrno(EISDIR, "open(dir, O_WRONLY)") { open(folder.path("dir"), O_WRONLY | O_CLOEXEC) }
            expectErrno(EISDIR, "open(dir, O_RDWR)") { open(folder.path("dir"), O_RDWR | O_CLOEXEC) }
            expectErrno(EISDIR, "open(dir, O_WRONLY|O_CREAT)") {
                open(folder.path("dir"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            }
            expectErrno(EISDIR, "unlink(dir)") { unlink(folder.path("dir")) }
            try withFile(folder.path("dir"), O_RDONLY | O_DIRECTORY) { fd throws in
                var buffer = [UInt8](repeating: 0, count: 16)
                expectErrno(EISDIR, "read(directory fd)") { read(fd, &buffer, 16) }
            }

            // ENOTDIR
            expectErrno(ENOTDIR, "open(file/x)") { open(folder.path("file/x"), O_RDONLY | O_CLOEXEC) }
            expectErrno(ENOTDIR, "open(file/x, O_CREAT)") {
                open(folder.path("file/x"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            }
            expectErrno(ENOTDIR, "mkdir(file/x)") { mkdir(folder.path("file/x"), 0o755) }
            expectErrno(ENOTDIR, "rmdir(file)") { rmdir(folder.path("file")) }
            expectErrno(ENOTDIR, "open(file, O_DIRECTORY)") {
                open(folder.path("file"), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            }
            expectErrno(ENOTDIR, "stat(file/)") {
                var info = stat()
                return stat(folder.path("file/"), &info)
            }

            // EEXIST
            expectErrno(EEXIST, "mkdir(existing dir)") { mkdir(folder.path("dir"), 0o755) }
            expectErrno(EEXIST, "mkdir(existing file)") { mkdir(folder.path("file"), 0o755) }
            expectErrno(EEXIST, "symlink(existing dir)") { symlink("x", folder.path("dir")) }

            // Nothing above changed anything.
            #expect(try listDirectory(folder.root).sorted() == ["dir", "file"])
            #expect(try readText(folder.path("file")) == "f")
            #expect(try readText(folder.path("dir/child")) == "c")

            // Nested mkdir and rmdir in order.
            try makeDirectory(folder.path("dir/a"))
            try makeDirectory(folder.path("dir/a/b"), mode: 0o700)
            #expect(permissions(try statPath(folder.path("dir/a/b"))) == 0o700)
            expectErrno(ENOTEMPTY, "rmdir(dir/a)") { rmdir(folder.path("dir/a")) }
            try posix("rmdir(dir/a/b)") { rmdir(folder.path("dir/a/b")) }
            try posix("rmdir(dir/a)") { rmdir(folder.path("dir/a")) }
            #expect(try listDirectory(folder.path("dir")) == ["child"])
        }
    }
}
