import Foundation
import Glibc
import Testing

/// Regular files: create, read, write, append, O_EXCL, O_TRUNC, truncate, unlink while open,
/// fallocate, statfs. Every test runs on a plain directory and on a live mount.
@Suite("POSIX files")
struct PosixSuiteFiles {
    @Test(arguments: TestFolder.Kind.allCases)
    func createWriteRead(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("file.bin")
            let content = patternBytes(count: 300_000, seed: 7)
            try withFile(path, O_WRONLY | O_CREAT | O_EXCL, 0o644) { try writeAll($0, content) }
            let info = try statPath(path)
            #expect(isRegular(info))
            #expect(permissions(info) == 0o644)
            #expect(info.st_size == 300_000)
            #expect(info.st_nlink == 1)
            #expect(try readFile(path) == content)

            // Overwrite in the middle through O_RDWR; the rest is untouched.
            try withFile(path, O_RDWR) { fd throws in
                try pwriteBytes(fd, bytes("MIDDLE"), offset: 150_000)
                #expect(try preadBytes(fd, count: 6, offset: 150_000) == bytes("MIDDLE"))
            }
            var expected = content
            expected.replaceSubrange(150_000..<150_006, with: bytes("MIDDLE"))
            #expect(try readFile(path) == expected)
            #expect(try statPath(path).st_size == 300_000)

            // O_CREAT without O_EXCL on an existing file opens it and keeps the content.
            try withFile(path, O_WRONLY | O_CREAT, 0o600) { _ in }
            #expect(try readFile(path) == expected)
            #expect(permissions(try statPath(path)) == 0o644, "O_CREAT does not change an existing file's mode")

            // Reading at and past end-of-file returns 0 bytes.
            try withFile(path, O_RDONLY) { fd throws in
                #expect(try preadBytes(fd, count: 10, offset: 300_000).isEmpty)
                #expect(try preadBytes(fd, count: 10, offset: 1_000_000).isEmpty)
                #expect(try preadBytes(fd, count: 10, offset: 299_995).count == 5)
            }

            // An empty file.
            try writeFile(folder.path("empty"), [UInt8]())
            #expect(try statPath(folder.path("empty")).st_size == 0)
            #expect(try readFile(folder.path("empty")).isEmpty)
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func largeFileAndTwoDescriptors(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("large")
            let content = patternBytes(count: 24 << 20, seed: 12)
            let writer = try openFile(path, O_WRONLY | O_CREAT | O_EXCL)
            defer { close(writer) }
            let reader = try openFile(path, O_RDONLY)
            defer { close(reader) }
            // Unaligned chunk sizes straddle every page and request boundary.
            var offset = 0
            var chunk = 1
            while offset < content.count {
                let end = min(offset + chunk, content.count)
                try writeAll(writer, Array(content[offset..<end]))
                offset = end
                chunk = chunk * 3 + 7
                if chunk > 3_000_000 { chunk = 4093 }
            }
            // A second descriptor sees everything before the writer closes.
            #expect(try fstatFD(reader).st_size == off_t(content.count))
            for probe in [0, 4095, 131_071, 131_072, 1_000_003, (24 << 20) - 10] {
                let got = try preadBytes(reader, count: 10, offset: off_t(probe))
                #expect(
                    got == Array(content[probe..<min(probe + 10, content.count)]), "pread at \(probe) on a second fd")
            }
            try posix("fsync") { fsync(writer) }
            #expect(try readFile(path) == content)
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func openErrors(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            expectErrno(ENOENT, "open(missing, O_RDONLY)") { open(folder.path("missing"), O_RDONLY | O_CLOEXEC) }
            expectErrno(ENOENT, "open(missing/x, O_CREAT)") {
                open(folder.path("missing/x"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            }
            expectErrno(ENOENT, "stat(missing)") {
                var info = stat()
                return stat(folder.path("missing"), &info)
            }
            expectErrno(ENOENT, "unlink(missing)") { unlink(folder.path("missing")) }
            #expect(try listDirectory(folder.root).isEmpty, "failed calls leave nothing behind")
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func appendAlwaysWritesAtTheEnd(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("log")
            try writeFile(path, "abc")
            try withFile(path, O_WRONLY | O_APPEND) { fd throws in
                try posix("lseek") { lseek(fd, 0, SEEK_SET) }
                try writeAll(fd, bytes("def"))
                #expect(lseek(fd, 0, SEEK_CUR) == 6, "the offset is at the end after an O_APPEND write")
                try writeAll(fd, bytes("gh"))
            }
            try appendFile(path, bytes("ij"))
            #expect(try readText(path) == "abcdefghij")
            #expect(try statPath(path).st_size == 10)

            // O_APPEND | O_CREAT on a new file.
            try withFile(folder.path("new-log"), O_WRONLY | O_APPEND | O_CREAT, 0o644) { try writeAll($0, bytes("1")) }
            try appendFile(folder.path("new-log"), bytes("2"))
            #expect(try readText(folder.path("new-log")) == "12")
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func exclusiveCreate(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("excl")
            try withFile(path, O_WRONLY | O_CREAT | O_EXCL, 0o640) { try writeAll($0, bytes("first")) }
            expectErrno(EEXIST, "open(existing, O_CREAT|O_EXCL)") {
                open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            }
            #expect(try readText(path) == "first", "a refused O_EXCL open leaves the file alone")
            #expect(permissions(try statPath(path)) == 0o640)

            try makeDirectory(folder.path("dir"))
            expectErrno(EEXIST, "open(directory, O_CREAT|O_EXCL)") {
                open(folder.path("dir"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            }
            // O_EXCL does not follow symlinks, even dangling ones.
            try makeSymlink(target: "nowhere", at: folder.path("dangling"))
            expectErrno(EEXIST, "open(dangling symlink, O_CREAT|O_EXCL)") {
                open(folder.path("dangling"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            }
            #expect(!pathExists(folder.path("nowhere")))
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func truncateOnOpen(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("trunc")
            try writeFile(path, patternBytes(count: 70_000))
            try withFile(path, O_WRONLY | O_TRUNC) { fd throws in
                #expect(try fstatFD(fd).st_size == 0)
            }
            #expect(try statPath(path).st_size == 0)
            #expect(try readFile(path).isEmpty)
            // O_TRUNC then write: only the new bytes.
            try withFile(path, O_RDWR | O_TRUNC) { try writeAll($0, bytes("new")) }
            #expect(try readText(path) == "new")
            // O_RDONLY | O_TRUNC truncates as well on Linux.
            try withFile(path, O_RDONLY | O_TRUNC) { _ in }
            #expect(try statPath(path).st_size == 0)
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func truncateUpAndDown(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("sized")
            try writeFile(path, "hello world")
            try posix("truncate up") { truncate(path, 100_000) }
            #expect(try statPath(path).st_size == 100_000)
            var expected = bytes("hello world") + [UInt8](repeating: 0, count: 100_000 - 11)
            #expect(try readFile(path) == expected, "the grown part reads as zeros")

            try posix("truncate down") { truncate(path, 3) }
            #expect(try statPath(path).st_size == 3)
            #expect(try readText(path) == "hel")

            // Growing again must not resurrect the cut bytes.
            try posix("truncate up again") { truncate(path, 11) }
            expected = bytes("hel") + [UInt8](repeating: 0, count: 8)
            #expect(try readFile(path) == expected)

            // ftruncate through an open descriptor, seen by fstat and by another open.
            try withFile(path, O_RDWR) { fd throws in
                try posix("ftruncate") { ftruncate(fd, 5000) }
                #expect(try fstatFD(fd).st_size == 5000)
                #expect(try statPath(path).st_size == 5000)
                try posix("ftruncate 0") { ftruncate(fd, 0) }
                try pwriteBytes(fd, bytes("x"), offset: 9)
            }
            #expect(try readFile(path) == [UInt8](repeating: 0, count: 9) + bytes("x"))
            // truncate(path) while another descriptor holds unflushed writes to the same file.
            try withFile(path, O_RDWR | O_TRUNC) { fd throws in
                try writeAll(fd, [UInt8](repeating: 0x61, count: 10_000))
                try posix("truncate while dirty") { truncate(path, 10) }
                #expect(try fstatFD(fd).st_size == 10)
                try pwriteBytes(fd, bytes("b"), offset: 20)
            }
            #expect(
                try readFile(path) == [UInt8](repeating: 0x61, count: 10) + [UInt8](repeating: 0, count: 10)
                    + bytes("b"))
            expectErrno(EINVAL, "truncate(-1)") { truncate(path, -1) }
            try makeDirectory(folder.path("d"))
            expectErrno(EISDIR, "truncate(directory)") { truncate(folder.path("d"), 0) }
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func unlinkWhileOpen(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("doomed")
            try writeFile(path, "payload")
            let fd = try openFile(path, O_RDWR)
            defer { close(fd) }
            try posix("unlink(open file)") { unlink(path) }
            #expect(!pathExists(path))
            #expect(try !listDirectory(folder.root).contains("doomed"))
            #expect(try fstatFD(fd).st_nlink == 0, "an unlinked open file has no links")
            #expect(try preadBytes(fd, count: 100, offset: 0) == bytes("payload"), "still readable through the fd")
            try pwriteBytes(fd, bytes("MORE"), offset: 7)
            #expect(try preadBytes(fd, count: 100, offset: 0) == bytes("payloadMORE"), "still writable")
            #expect(try fstatFD(fd).st_size == 11)

            // A new file under the same name is a different file.
            try writeFile(path, "fresh")
            #expect(try readText(path) == "fresh")
            #expect(try preadBytes(fd, count: 100, offset: 0) == bytes("payloadMORE"))
            #expect(try statPath(path).st_ino != (try fstatFD(fd)).st_ino)
            try posix("close") { close(fd) }
            #expect(try readText(path) == "fresh")
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func fallocateGrowsTheFile(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("falloc")
            try withFile(path, O_RDWR | O_CREAT, 0o644) { fd throws in
                try writeAll(fd, bytes("abc"))
                try posix("fallocate(0, 0, 1 MiB)") { Linux.fallocate(fd, 0, 0, 1 << 20) }
                #expect(try fstatFD(fd).st_size == 1 << 20)
                #expect(try fstatFD(fd).st_blocks * 512 >= 1 << 20, "fallocate reserves the blocks")
                // Inside the current size it changes nothing.
                try posix("fallocate(0, 100, 10)") { Linux.fallocate(fd, 0, 100, 10) }
                #expect(try fstatFD(fd).st_size == 1 << 20)
            }
            var expected = [UInt8](repeating: 0, count: 1 << 20)
            expected.replaceSubrange(0..<3, with: bytes("abc"))
            #expect(try readFile(path) == expected)
            #expect(try statPath(path).st_size == 1 << 20)

            // Other modes: FALLOC_FL_KEEP_SIZE (1) and PUNCH_HOLE | KEEP_SIZE (3).
            try writeFile(folder.path("punch"), [UInt8](repeating: 0x77, count: 65536))
            try withFile(folder.path("punch"), O_RDWR) { fd throws in
                switch kind {
                case .plain:
                    try posix("fallocate(PUNCH_HOLE | KEEP_SIZE)") { Linux.fallocate(fd, 3, 4096, 8192) }
                    #expect(try preadBytes(fd, count: 8192, offset: 4096) == [UInt8](repeating: 0, count: 8192))
                    try posix("fallocate(KEEP_SIZE)") { Linux.fallocate(fd, 1, 65536, 65536) }
                    #expect(try fstatFD(fd).st_size == 65536)
                case .mount:
                    // Documented deviation: mode 0 only.
                    expectErrno(EOPNOTSUPP, "fallocate(PUNCH_HOLE | KEEP_SIZE) on the mount") {
                        Linux.fallocate(fd, 3, 4096, 8192)
                    }
                    expectErrno(EOPNOTSUPP, "fallocate(KEEP_SIZE) on the mount") {
                        Linux.fallocate(fd, 1, 65536, 65536)
                    }
                    #expect(try readFile(folder.path("punch")) == [UInt8](repeating: 0x77, count: 65536))
                }
            }
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func statfsWorks(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            var info = statvfs()
            try posix("statvfs(root)") { statvfs(folder.root, &info) }
            #expect(info.f_bsize > 0)
            #expect(info.f_frsize > 0)
            #expect(info.f_blocks > 0)
            #expect(info.f_bfree <= info.f_blocks)
            #expect(info.f_bavail <= info.f_blocks)
            #expect(info.f_namemax >= 255)
            try writeFile(folder.path("f"), "x")
            var viaFD = statvfs()
            try withFile(folder.path("f"), O_RDONLY) { fd in try posix("fstatvfs") { fstatvfs(fd, &viaFD) } }
            #expect(viaFD.f_bsize == info.f_bsize)
            #expect(viaFD.f_blocks == info.f_blocks)
        }
    }
}
