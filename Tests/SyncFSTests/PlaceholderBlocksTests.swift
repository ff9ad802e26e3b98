import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// A placeholder's `st_blocks` without a `stat` of a cache file it does not have
/// (`ContentCache.isKnownAbsent`), and measured whenever it has one — across a file's lifecycle.
/// In the serialized engine suite.
extension SyncEngineTests {
    private struct Blocks: Equatable, CustomStringConvertible {
        var reported: Int64
        var onDisk: Int64?
        var knownAbsent: Bool
        var placeholder: Bool
        var description: String {
            "reported \(reported), on disk \(onDisk.map(String.init) ?? "none"), known absent \(knownAbsent), placeholder \(placeholder)"
        }
    }

    private func blocks(_ fixture: FileSystemFixture, _ name: String) throws -> Blocks {
        let ino = try fixture.lookupIno(name)
        let node = try #require(fixture.fs.live.transact { $0.nodes[ino] })
        let id = node.fileID
        var info = stat()
        let onDisk = stat(fixture.fs.cache.path(for: id), &info) == 0 ? Int64(info.st_blocks) : nil
        return Blocks(
            reported: try fixture.fs.getattr(ino).blocks, onDisk: onDisk,
            knownAbsent: fixture.fs.cache.isKnownAbsent(id),
            placeholder: fixture.fs.live.transact { _ in node.isPlaceholder })
    }

    @Test func aPlaceholderIsMeasuredExactlyWhenItHasACacheFile() async throws {
        let base = InMemoryContainer()
        let slow = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: slow)
        let data = SeededGenerator.bytes(count: 16 << 20, seed: 21)
        _ = try pair.a.makeFile("movie.bin", contents: data)
        try await eventually("on B") { try pair.b.childNames() == ["movie.bin"] }
        try await pair.settle()

        // A placeholder never downloaded: no cache file, known, one block without a `stat`.
        var now = try blocks(pair.b, "movie.bin")
        #expect(now == Blocks(reported: 1, onDisk: nil, knownAbsent: true, placeholder: true), "\(now)")

        // A partial download writes the cache file: still a placeholder, measured.
        slow.delay(.chunk, by: .milliseconds(150))
        let ino = try pair.b.lookupIno("movie.bin")
        let handle = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        try pair.b.fs.residency.ensureContent(handle, offset: 0, count: 4096)
        pair.b.fs.fileIO.release(handle)
        try await eventually("the download stopped") { pair.b.fs.transfers.active.isEmpty }
        now = try blocks(pair.b, "movie.bin")
        #expect(now.placeholder && !now.knownAbsent, "\(now)")
        #expect(now.reported == now.onDisk && now.reported >= 8, "the partial file is measured: \(now)")

        // Across a restart: the listing at load finds the partial file.
        try pair.restartB()
        now = try blocks(pair.b, "movie.bin")
        #expect(now.placeholder && !now.knownAbsent && now.reported == now.onDisk && now.reported >= 8, "\(now)")

        // Evicting a placeholder frees the partial download's bytes: known absent again.
        let freed = try pair.b.fs.residency.eviction.evict(below: .root)
        #expect(freed.map(\.outcome) == [.alreadyOnline])
        now = try blocks(pair.b, "movie.bin")
        #expect(now == Blocks(reported: 1, onDisk: nil, knownAbsent: true, placeholder: true), "\(now)")

        // Downloaded: local, measured.
        slow.delay(.chunk, by: nil)
        #expect(try contents(pair.b, "movie.bin") == data)
        try await eventually("local") { try !blocks(pair.b, "movie.bin").placeholder }
        now = try blocks(pair.b, "movie.bin")
        #expect(!now.knownAbsent && now.reported == now.onDisk && now.reported >= Int64(data.count / 512), "\(now)")

        // Evicted back to a placeholder: the daemon removed the file, so it knows.
        let evicted = try pair.b.fs.residency.eviction.evict(below: .root)
        #expect(evicted.map(\.outcome) == [.evicted(bytes: Int64(data.count))])
        now = try blocks(pair.b, "movie.bin")
        #expect(now == Blocks(reported: 1, onDisk: nil, knownAbsent: true, placeholder: true), "\(now)")

        // A placeholder opened for reading gets an (empty) cache file: measured, never assumed.
        let reopened = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        now = try blocks(pair.b, "movie.bin")
        #expect(now.placeholder && !now.knownAbsent && now.onDisk != nil, "\(now)")
        pair.b.fs.fileIO.release(reopened)

        // Discarded: the file deleted, its cache file goes with it.
        let id = try #require(pair.b.fileID(of: ino))
        try pair.b.fs.unlink(parent: .root, name: FileName("movie.bin"))
        pair.b.fs.forget(ino, count: pair.b.fs.live.transact { $0.inodes.lookupCount(ino) })
        try await eventually("the cache file removed") { access(pair.b.fs.cache.path(for: id), F_OK) != 0 }
        #expect(pair.b.fs.cache.isKnownAbsent(id))
    }

    /// A damaged copy discarded while mounted keeps its cache file (the download reuses its good
    /// chunks): the placeholder it becomes is measured, not answered one block.
    @Test func aDiscardedDamagedCopyIsMeasured() async throws {
        let pair = try SyncedPair()
        let good = SeededGenerator.bytes(count: 3 << 20, seed: 22)
        try pair.a.makeFile("doc.bin", contents: good)
        try await eventually("doc.bin on B") { (try? contents(pair.b, "doc.bin")) == good }
        let cacheFile = try #require(pair.b.cacheFilePath(of: try pair.b.lookupIno("doc.bin")))
        try pair.restartB {
            let fd = open(cacheFile, O_WRONLY)
            #expect(fd >= 0)
            let damage = [UInt8](repeating: 0xee, count: 512)
            #expect(damage.withUnsafeBytes { pwrite(fd, $0.baseAddress, 512, off_t(2 << 20)) } == 512)
            close(fd)
        }
        let ino = try pair.b.lookupIno("doc.bin")
        let handle = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { pair.b.fs.fileIO.release(handle) }
        // The check of the damaged chunk discards the copy; the file is a placeholder again.
        #expect(!pair.b.fs.residency.cacheVerifier.verifyCachedContent(handle, offset: 2 << 20, count: 4096))
        let now = try blocks(pair.b, "doc.bin")
        #expect(now.placeholder && !now.knownAbsent && now.reported == now.onDisk, "\(now)")
        #expect(now.reported >= Int64(good.count / 512), "the kept copy's blocks: \(now)")
    }
}
