import Foundation
import Glibc
import Testing

/// Large writes reach the cache file by splice, never through the daemon's memory
/// (`FuseTransferSizes`; doc/performance-log.md, "Sequential I/O at the ceiling").
///
/// How it is seen from outside: `rchar` in `/proc/PID/io` counts the bytes a process got from
/// `read()`/`pread()`, not what it moved with `splice`. The daemon receives every request from
/// `/dev/fuse`; when libfuse could not splice a WRITE it `read()` the whole request (data
/// included) into a buffer, so 64 MiB written through the mount added at least 64 MiB to
/// the daemon's `rchar`. Uploads are held back (`--upload-delay` of 10 minutes) so that the
/// uploader's reads of the cache file do not count.
@Suite(.serialized) struct SplicedWriteTest {
    static let mebibyte = 1 << 20
    /// `O_DIRECT` (Glibc exports it to Swift only under `_GNU_SOURCE`).
    #if arch(arm64)
        static let directIO: Int32 = 0o200000
    #else
        static let directIO: Int32 = 0o40000
    #endif

    /// 64 MiB in 1 MiB writes + `fsync` through the mount: the daemon reads less than 8 MiB with
    /// `read()` meanwhile, and the file reads back as written (size and every byte).
    @Test func largeWritesAreSplicedIntoTheCacheFile() throws {
        // libfuse splices only when its pipe can hold a whole request (1 MiB here).
        let pipeMax = try #require(Self.pipeMaxSize(), "cannot read /proc/sys/fs/pipe-max-size")
        try #require(
            pipeMax >= Self.mebibyte,
            "pipe-max-size is \(pipeMax) on this machine: libfuse cannot splice 1 MiB requests, so this test cannot tell"
        )
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "600000"])
        defer { folder.tearDown() }
        let pid = try #require(folder.daemonPID)
        let path = folder.path("big.bin")
        let block = (0..<Self.mebibyte).map { UInt8(1 + $0 % 251) }
        let count = 64

        let before = try #require(Self.bytesRead(by: pid), "cannot read /proc/\(pid)/io")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0, "open failed: \(errnoName(errno))")
        for index in 0..<count {
            var done = 0
            while done < block.count {
                let written = block.withUnsafeBytes { bytes in
                    Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
                }
                guard written > 0 else {
                    close(fd)
                    Issue.record("write of block \(index) failed: \(errnoName(errno))")
                    return
                }
                done += written
            }
        }
        #expect(fsync(fd) == 0, "fsync failed: \(errnoName(errno))")
        #expect(close(fd) == 0)
        let after = try #require(Self.bytesRead(by: pid), "cannot read /proc/\(pid)/io")

        let readByDaemon = after - before
        #expect(
            readByDaemon < 8 * Self.mebibyte,
            "the daemon read() \(readByDaemon) bytes while 64 MiB were written: WRITE requests are not spliced")

        let content = try #require(FileManager.default.contents(atPath: path))
        #expect(content.count == count * Self.mebibyte)
        let expected = Data(block)
        for index in 0..<count {
            let slice = content[(index * Self.mebibyte)..<((index + 1) * Self.mebibyte)]
            guard slice == expected else {
                Issue.record("block \(index) reads back different from what was written")
                break
            }
        }
    }

    /// Direct writes (`O_DIRECT`, sent to the daemon as they come, not through the page cache) of
    /// 1 MiB from buffers that do not start on a page: their pages are one more than a page-aligned
    /// megabyte's, the case where a request could outgrow libfuse's 1 MiB pipe. Every write is
    /// accepted whole (the kernel splits it at `max_pages`), the content reads back as written,
    /// and the daemon is still serving afterwards.
    @Test func unalignedDirectWritesOfAMebibyteArriveWhole() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let path = folder.path("direct.bin")
        let offsets = [1, 100, 4095]
        let source = (0..<(Self.mebibyte + 4096)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | Self.directIO | O_CLOEXEC, 0o644)
        try #require(fd >= 0, "open with O_DIRECT failed: \(errnoName(errno))")
        var expected = Data()
        for (index, start) in offsets.enumerated() {
            let written = source.withUnsafeBytes { bytes in
                pwrite(fd, bytes.baseAddress! + start, Self.mebibyte, off_t(index * Self.mebibyte))
            }
            #expect(written == Self.mebibyte, "direct write \(index) returned \(written) (\(errnoName(errno)))")
            expected.append(contentsOf: source[start..<(start + Self.mebibyte)])
        }
        #expect(close(fd) == 0)
        let content = try #require(FileManager.default.contents(atPath: path))
        #expect(content.count == expected.count)
        #expect(content == expected, "the direct writes read back different from what was written")
        // The daemon still answers (a request the device could not hand over would have ended it).
        #expect(FileManager.default.createFile(atPath: folder.path("after.txt"), contents: Data("ok".utf8)))
        #expect(folder.daemonPID.map { kill($0, 0) == 0 } == true)
    }

    /// `rchar` of the process: bytes it got from `read()` and `pread()` since it started.
    static func bytesRead(by pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("rchar:") {
            return Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    static func pipeMaxSize() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/sys/fs/pipe-max-size", encoding: .utf8) else {
            return nil
        }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
