import Foundation
import Glibc
import TestSupport
import Testing

/// A clean cached file with garbage written into it is never served as if good. The first reads after a mount check the cached copy against its manifest's chunk hashes;
/// a damaged copy is discarded and downloaded again. doc/SEMANTICS.md, "Damaged cached content".
@Suite struct DamagedCacheTest {
    enum When: String, CaseIterable {
        /// Garbage written while the daemon is stopped, then mounted.
        case whileStopped
        /// Garbage written behind the running daemon's back, before the file's first read.
        case whileMounted
    }

    /// A synced file (several chunks), the daemon stopped cleanly, garbage written into the middle
    /// of its cache file (same length), the file read: the good bytes, never the garbage; the
    /// damage is logged and counted in `status`; the copy is downloaded again (the fixed bytes
    /// are back in the cache file).
    @Test(arguments: When.allCases) func aDamagedCachedCopyIsNeverServed(_ when: When) throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { folder.tearDown() }
        let good = try randomBytes(6 << 20)
        try writeFile(folder.path("big.bin"), good)
        try writeFile(folder.path("small.txt"), "a small clean file\n")
        try #require(folder.expectSync())
        let cacheFile = try #require(try LocalFaultsTest.cacheFiles(folder.stateDir, holding: good).first)
        let garbage = [UInt8](repeating: 0x5a, count: 4096)
        let damage = {
            try withFile(cacheFile, O_WRONLY) { fd in
                let written = garbage.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 3 << 20) }
                try #require(written == garbage.count)
            }
        }
        try folder.unmount()
        if when == .whileStopped { try damage() }
        try folder.remount()
        if when == .whileMounted { try damage() }
        let read = try readFile(folder.path("big.bin"))
        #expect(read.count == good.count)
        #expect(
            firstDifference(read, good) == nil,
            "the good bytes are served (first wrong byte: \(firstDifference(read, good).map(String.init) ?? "none"))")
        #expect(
            try readFile(folder.path("small.txt")) == bytes("a small clean file\n"), "an intact copy reads as before")
        #expect(folder.daemonLog().contains("is damaged"), "logged:\n\(folder.daemonLog())")
        #expect(try folder.syncStatus().damagedCacheCopies == 1, "counted in status")
        let human = ModelProcess.run([try TestFolder.binaryPath(), "status", folder.root], timeout: 60)
        #expect(human.stdout.contains("damaged cached copies: 1 since the mount"), "\(human.stdout)")
        #expect(try readFile(cacheFile) == good, "the copy was downloaded again")
        // The next mount reads the repaired copy (and counts nothing).
        try folder.unmount()
        try folder.remount()
        #expect(try readFile(folder.path("big.bin")) == good)
        #expect(try folder.syncStatus().damagedCacheCopies == 0)
    }

    /// A file whose copy is damaged but which is opened for writing (without O_TRUNC) first: the
    /// check runs before the open, so the edit is made on the good bytes and what uploads holds
    /// no garbage.
    @Test func anEditNeverBuildsOnADamagedCopy() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let good = try randomBytes(1 << 20)
            try writeFile(a.path("doc.bin"), good)
            try #require(a.expectSync())
            let cacheFile = try #require(try LocalFaultsTest.cacheFiles(a.stateDir, holding: good).first)
            try a.unmount()
            try withFile(cacheFile, O_WRONLY) { fd in
                let written = [UInt8](repeating: 0x5a, count: 100).withUnsafeBytes {
                    pwrite(fd, $0.baseAddress, $0.count, 1000)
                }
                try #require(written == 100)
            }
            try a.remount()
            try withFile(a.path("doc.bin"), O_WRONLY | O_APPEND) { fd in try writeAll(fd, bytes("appended")) }
            #expect(a.expectSync())
            #expect(
                waitUntil(timeout: 30) { try readFile(b.path("doc.bin")) == good + bytes("appended") },
                "\(a.daemonLog())")
        }
    }
}
