import Foundation
import Glibc
import Testing

/// Large sparse files (past 4 GiB: 64-bit offsets all the way through) and shared mappings.
@Suite("POSIX sparse files and mmap")
struct PosixSuiteSparseAndMmap {
    static let fiveGiB: off_t = 5 << 30

    @Test(arguments: TestFolder.Kind.allCases)
    func sparseFilePastFourGiB(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("sparse")
            let fiveGiB = Self.fiveGiB
            try withFile(path, O_RDWR | O_CREAT | O_EXCL, 0o644) { fd throws in
                try pwriteBytes(fd, [0x5A], offset: fiveGiB)
                let written = try fstatFD(fd)
                #expect(written.st_size == fiveGiB + 1)
                if kind == .plain {
                    #expect(
                        written.st_blocks > 0,
                        "the written byte occupies a block while the file is open (st_blocks \(written.st_blocks))")
                }
                // Documented deviation: on the mount st_blocks counts what reached the cache file,
                // so while the byte is only in the kernel's page cache it may show 0; checked after close.
                // The writer itself can find its data and holes before closing (cp --sparse, tar -S).
                errno = 0
                let data = lseek(fd, 0, Linux.seekData)
                let dataErrno = errno
                #expect(
                    data <= fiveGiB && data > fiveGiB - (1 << 20),
                    "SEEK_DATA from 0 on the still-open writer: got \(data) (\(data == -1 ? errnoName(dataErrno) : "ok"))"
                )
                errno = 0
                let hole = lseek(fd, 0, Linux.seekHole)
                let holeErrno = errno
                #expect(
                    hole == 0,
                    "SEEK_HOLE from 0 on the still-open writer: got \(hole) (\(hole == -1 ? errnoName(holeErrno) : "ok"))"
                )
                #expect(try preadBytes(fd, count: 1, offset: fiveGiB) == [0x5A])
            }
            let info = try statPath(path)
            #expect(info.st_size == fiveGiB + 1, "size is 5 GiB + 1")
            #expect(info.st_blocks > 0, "after close the written byte occupies a block (\(info.st_blocks))")
            #expect(info.st_blocks < 1024, "the file stays sparse (\(info.st_blocks) blocks)")
            #expect(info.st_blocks * 512 < 64 << 20, "a hole takes no space (st_blocks \(info.st_blocks))")
            #expect(info.st_blocks > 0, "the data takes some space")

            try withFile(path, O_RDONLY) { fd throws in
                let zeros = [UInt8](repeating: 0, count: 65536)
                #expect(try preadBytes(fd, count: 65536, offset: 0) == zeros, "the hole at 0 reads as zeros")
                #expect(try preadBytes(fd, count: 65536, offset: (4 << 30) - 100) == zeros, "zeros across 4 GiB")
                #expect(try preadBytes(fd, count: 4096, offset: fiveGiB - 4096) == [UInt8](repeating: 0, count: 4096))
                #expect(
                    try preadBytes(fd, count: 10, offset: fiveGiB - 2) == [0, 0, 0x5A], "the byte at 5 GiB, then EOF")
                #expect(try preadBytes(fd, count: 10, offset: fiveGiB + 1).isEmpty)

                // SEEK_DATA / SEEK_HOLE: the only data is the block holding the byte at 5 GiB.
                let data = try posix("lseek(0, SEEK_DATA)") { lseek(fd, 0, Linux.seekData) }
                #expect(
                    data <= fiveGiB && data > fiveGiB - (1 << 20),
                    "SEEK_DATA from 0 finds the data near 5 GiB (got \(data))")
                let hole = try posix("lseek(0, SEEK_HOLE)") { lseek(fd, 0, Linux.seekHole) }
                #expect(hole == 0, "SEEK_HOLE from 0 finds the hole at 0 (got \(hole))")
                let holeAfterData = try posix("lseek(5 GiB, SEEK_HOLE)") { lseek(fd, fiveGiB, Linux.seekHole) }
                #expect(
                    holeAfterData == fiveGiB + 1, "after the last data, the hole is end-of-file (got \(holeAfterData))")
                let dataAtByte = try posix("lseek(5 GiB, SEEK_DATA)") { lseek(fd, fiveGiB, Linux.seekData) }
                #expect(dataAtByte == fiveGiB)
                expectErrno(ENXIO, "lseek(EOF, SEEK_DATA)") { lseek(fd, fiveGiB + 1, Linux.seekData) }
                expectErrno(ENXIO, "lseek(past EOF, SEEK_HOLE)") { lseek(fd, fiveGiB + 10, Linux.seekHole) }
                // Plain SEEK_END works with a 64-bit size.
                #expect(lseek(fd, 0, SEEK_END) == fiveGiB + 1)
            }

            // Truncating back below 4 GiB and growing again: no stale byte at 5 GiB.
            try posix("truncate(1 MiB)") { truncate(path, 1 << 20) }
            #expect(try statPath(path).st_size == 1 << 20)
            try posix("truncate(5 GiB + 1)") { truncate(path, fiveGiB + 1) }
            try withFile(path, O_RDONLY) { fd throws in
                #expect(try preadBytes(fd, count: 1, offset: fiveGiB) == [0])
            }
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func sharedMmapWriteIsSeenByRead(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("mapped")
            let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
            let length = pageSize * 3 + 100
            let original = patternBytes(count: length, seed: 3)
            try writeFile(path, original)

            var expected = original
            try withFile(path, O_RDWR) { fd throws in
                let mapping = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                guard let mapping, mapping != MAP_FAILED else {
                    throw PosixError(code: errno, operation: "mmap(MAP_SHARED, PROT_WRITE)")
                }
                let bytesView = mapping.assumingMemoryBound(to: UInt8.self)
                #expect(
                    bytesView[0] == original[0] && bytesView[length - 1] == original[length - 1],
                    "the map shows the file")
                // Write across page boundaries and into the partial last page.
                for offset in [0, pageSize - 2, pageSize - 1, pageSize, 2 * pageSize + 7, length - 1] {
                    bytesView[offset] = UInt8(truncatingIfNeeded: offset &* 31 &+ 1)
                    expected[offset] = bytesView[offset]
                }
                try posix("msync(MS_SYNC)") { msync(mapping, length, MS_SYNC) }
                // Seen by read() on another descriptor while the mapping is still there.
                #expect(try readFile(path) == expected, "read() on another descriptor sees the mmap write")
                try posix("munmap") { munmap(mapping, length) }
            }
            #expect(try readFile(path) == expected, "read() after munmap + close sees the mmap write")
            #expect(try statPath(path).st_size == off_t(length), "mmap does not change the size")

            // And a write() is seen through a fresh mapping.
            try withFile(path, O_RDWR) { fd throws in
                try pwriteBytes(fd, bytes("WRITTEN"), offset: off_t(pageSize + 10))
                let mapping = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
                guard let mapping, mapping != MAP_FAILED else {
                    throw PosixError(code: errno, operation: "mmap(MAP_SHARED, PROT_READ)")
                }
                defer { munmap(mapping, length) }
                let view = UnsafeBufferPointer(start: mapping.assumingMemoryBound(to: UInt8.self), count: length)
                #expect(Array(view[(pageSize + 10)..<(pageSize + 17)]) == bytes("WRITTEN"))
            }
        }
    }
}
