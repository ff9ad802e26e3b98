import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// A clean cached copy with garbage in it is never served as if good. The first reads
/// after a mount check it against its manifest's chunk hashes; a damaged copy becomes a
/// placeholder again and the read downloads the good bytes. In the serialized engine suite.
extension SyncEngineTests {
    /// A copy of `name` on B holding `good` (downloaded, clean), then damaged between two runs of B.
    private func damagedCopyOnB(_ good: [UInt8], damageAt offset: Int64) async throws -> (SyncedPair, InodeNumber) {
        let pair = try SyncedPair()
        try pair.a.makeFile("doc.bin", contents: good)
        try await eventually("doc.bin on B") { (try? contents(pair.b, "doc.bin")) == good }
        let cacheFile = try #require(pair.b.cacheFilePath(of: try pair.b.lookupIno("doc.bin")))
        try pair.restartB {
            let fd = open(cacheFile, O_WRONLY)
            #expect(fd >= 0)
            #expect(
                [UInt8](repeating: 0xee, count: 512).withUnsafeBytes { pwrite(fd, $0.baseAddress, 512, off_t(offset)) }
                    == 512)
            close(fd)
        }
        return (pair, try pair.b.lookupIno("doc.bin"))
    }

    @Test func aDamagedCachedCopyIsDownloadedAgainWhenRead() async throws {
        // Random content whose first chunk ends before the damage (a first chunk that ran past
        // it would make the "intact start" below damaged too).
        var generator = SystemRandomNumberGenerator()
        var good: [UInt8] = []
        repeat {
            good = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        } while good.withUnsafeBytes { ContentDefinedChunker.standard.cutPoint(in: $0) } >= 2 << 20
        let (pair, ino) = try await damagedCopyOnB(good, damageAt: 2 << 20)
        let node = try #require(pair.b.fs.live.transact { $0.nodes[ino] })
        let unchecked = node.contentUnverified.load(ordering: .relaxed)
        #expect(unchecked, "a clean copy is unchecked after the mount")
        // A read of the intact start checks only its chunks and serves them.
        let handle = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        #expect(
            try pair.b.fs.reads.prepareRead(handle, offset: 0, count: 4096, processName: { nil }) == nil,
            "intact: served at once")
        #expect(readBytes(handle.descriptor, count: 4096, at: 0) == Array(good[0..<4096]))
        #expect(pair.b.fs.residency.cacheVerifier.damagedCopiesFound.load(ordering: .relaxed) == 0)
        pair.b.fs.fileIO.release(handle)
        // The whole file: the damaged chunk is found, the good bytes are downloaded.
        #expect(try contents(pair.b, "doc.bin") == good)
        #expect(pair.b.fs.residency.cacheVerifier.damagedCopiesFound.load(ordering: .relaxed) == 1)
        #expect(pair.engineB.status().damagedCacheCopies == 1, "counted in status")
        let stillUnchecked = node.contentUnverified.load(ordering: .relaxed)
        #expect(!stillUnchecked)
        #expect(pair.b.cacheContents(of: ino) == good, "the cache file holds the good bytes again")
    }

    /// Two reads of the damaged range at once (the kernel's asynchronous readahead sends them): the
    /// one that finds the damage discards the copy; the other, which found the file local before
    /// that, must not then be told to serve the cache file (it still holds the garbage until the
    /// download repairs it). It was: a mount test read the garbage under load.
    @Test func aReadRacingTheDiscardOfADamagedCopyIsNotServedFromIt() async throws {
        var generator = SystemRandomNumberGenerator()
        let good = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let (pair, ino) = try await damagedCopyOnB(good, damageAt: 2 << 20)
        let residency = pair.b.fs.residency
        let first = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        let second = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer {
            pair.b.fs.fileIO.release(first)
            pair.b.fs.fileIO.release(second)
        }
        // Both readers found the file local; the first checks the damaged range and discards.
        #expect(
            !residency.cacheVerifier.verifyCachedContent(first, offset: 2 << 20, count: 4096),
            "the first finds the damage")
        #expect(residency.cacheVerifier.damagedCopiesFound.load(ordering: .relaxed) == 1)
        // The second asks only now: the copy it would be served from is discarded.
        #expect(
            !residency.cacheVerifier.verifyCachedContent(second, offset: 2 << 20, count: 4096),
            "the second reader is sent to the download, not to the damaged cache file")
        #expect(try contents(pair.b, "doc.bin") == good)
    }

    /// An intact copy is checked once: after its first complete read the mark is gone, so later
    /// reads cost one atomic load.
    @Test func anIntactCopyIsCheckedOnceThenServedWithoutChecks() async throws {
        let pair = try SyncedPair()
        let good = bytes(String(repeating: "an intact line\n", count: 200_000))
        try pair.a.makeFile("doc.txt", contents: good)
        try await eventually("doc.txt on B") { (try? contents(pair.b, "doc.txt")) == good }
        try pair.restartB()
        let ino = try pair.b.lookupIno("doc.txt")
        let node = try #require(pair.b.fs.live.transact { $0.nodes[ino] })
        let before = node.contentUnverified.load(ordering: .relaxed)
        #expect(before, "unchecked after the mount")
        #expect(try contents(pair.b, "doc.txt") == good)
        let after = node.contentUnverified.load(ordering: .relaxed)
        #expect(!after, "checked once")
        #expect(pair.b.fs.live.transact { _ in node.verification == nil })
        #expect(pair.b.fs.residency.cacheVerifier.damagedCopiesFound.load(ordering: .relaxed) == 0)
    }

    /// A file with a local change queued has no manifest to be checked against: never discarded.
    @Test func aModifiedFileIsNeverCheckedAgainstTheOldManifest() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: faulty)
        try pair.a.makeFile("doc.txt", contents: bytes("the synced version"))
        try await eventually("doc.txt on B") { (try? contents(pair.b, "doc.txt")) == bytes("the synced version") }
        faulty.startOutage()
        let ino = try pair.b.lookupIno("doc.txt")
        let handle = try pair.b.fs.open(ino, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.b.write(handle, bytes("a local edit, queued"), at: 0)
        pair.b.fs.fileIO.release(handle)
        try pair.restartB()
        let node = try #require(pair.b.fs.live.transact { $0.nodes[ino] })
        let marked = node.contentUnverified.load(ordering: .relaxed)
        #expect(!marked, "a queued edit is not marked for checking")
        #expect(try contents(pair.b, "doc.txt") == bytes("a local edit, queued"))
        #expect(pair.b.fs.residency.cacheVerifier.damagedCopiesFound.load(ordering: .relaxed) == 0)
    }

    /// An open for writing checks the whole copy first: an edit never builds on damaged bytes.
    @Test func anOpenForWritingChecksTheCopyFirst() async throws {
        let good = bytes(String(repeating: "a line of the good version\n", count: 4000))
        let (pair, ino) = try await damagedCopyOnB(good, damageAt: 50_000)
        let handle = try pair.b.fs.open(ino, flags: O_WRONLY, caller: testCaller)
        pair.b.fs.fileIO.release(handle)
        #expect(pair.b.fs.residency.cacheVerifier.damagedCopiesFound.load(ordering: .relaxed) == 1)
        #expect(pair.b.cacheContents(of: ino) == good, "downloaded again before the open returned")
    }
}
