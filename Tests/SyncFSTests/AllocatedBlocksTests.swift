import Glibc
import Testing

@testable import SyncFS

/// `st_blocks` is measured once per content state and kept (`AllocatedBlocks`): every change of
/// the cache file must show in the next `getattr`, as a `stat` of the cache file would.
@Suite("SyncFileSystem: kept st_blocks and batched readdirplus")
struct AllocatedBlocksTests {
    private func blocks(_ fixture: FileSystemFixture, _ ino: InodeNumber) throws -> Int64 {
        try fixture.fs.getattr(ino).blocks
    }

    private func cacheBlocks(_ fixture: FileSystemFixture, _ ino: InodeNumber) throws -> Int64 {
        let id = try #require(fixture.fileID(of: ino))
        return fixture.fs.cache.allocatedBytes(of: id) / 512
    }

    @Test func writesTruncatesAndFallocateShowInTheNextGetattr() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("f"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        let ino = reply.attributes.ino
        #expect(try blocks(fixture, ino) == 0)
        #expect(try blocks(fixture, ino) == 0, "asked twice: the kept value")

        try fixture.write(handle, [UInt8](repeating: 7, count: 64 << 10), at: 0)
        let written = try blocks(fixture, ino)
        #expect(written >= 128, "64 KiB written: \(written) blocks")
        #expect(written == (try cacheBlocks(fixture, ino)))

        try fixture.fs.fileIO.fallocate(handle, mode: 0, offset: 0, length: 1 << 20)
        #expect(try blocks(fixture, ino) >= 2048, "fallocate of 1 MiB")
        #expect(try blocks(fixture, ino) == (try cacheBlocks(fixture, ino)))

        var changes = AttributeChanges()
        changes.size = 0
        _ = try fixture.fs.setattr(ino, changes, handle: handle, caller: testCaller)
        #expect(try blocks(fixture, ino) == 0, "truncated to 0")
        fixture.fs.fileIO.release(handle)

        // A hole: only the written byte takes space.
        let sparse = try fixture.fs.open(ino, flags: O_RDWR, caller: testCaller)
        try fixture.write(sparse, [1], at: 64 << 20)
        fixture.fs.fileIO.release(sparse)
        let afterHole = try blocks(fixture, ino)
        #expect(afterHole > 0 && afterHole < 1024, "\(afterHole) blocks")
        #expect(afterHole == (try cacheBlocks(fixture, ino)))
    }

    /// A measurement taken while a content change is in progress is not kept: the change may
    /// still move the blocks after the `stat`.
    @Test func aMeasurementDuringAContentChangeIsNotKept() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        let node = try #require(fixture.fs.live.transact { tree in tree.nodes[ino] })
        node.beginContentChange()
        #expect(try blocks(fixture, ino) == 0)
        #expect(fixture.fs.live.transact { _ in node.allocatedBlocks } == nil)
        // The change lands in the cache file behind the daemon's back, then ends.
        let descriptor = try fixture.fs.cache.open(node.fileID)
        #expect(ftruncate(descriptor, 0) == 0 && posix_fallocate(descriptor, 0, 256 << 10) == 0)
        close(descriptor)
        node.endContentChange()
        #expect(try blocks(fixture, ino) >= 512, "the blocks after the change, not the ones measured during it")
        #expect(fixture.fs.live.transact { _ in node.allocatedBlocks } != nil, "kept once nothing changes")
    }

    /// Content that stops being local (evicted, a damaged copy discarded) or becomes local (a
    /// download done) forgets the kept measurement.
    @Test func becomingAPlaceholderForgetsTheKeptBlocks() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: [UInt8](repeating: 3, count: 64 << 10))
        let node = try #require(fixture.fs.live.transact { tree in tree.nodes[ino] })
        #expect(try blocks(fixture, ino) >= 128)
        #expect(fixture.fs.live.transact { _ in node.allocatedBlocks } != nil)
        // As eviction does, less the store: the tree's counts follow (`TreeCounts`).
        fixture.fs.live.transact { tree in
            node.apply(.evict, queued: false)
            tree.recount(node)
        }
        #expect(fixture.fs.live.transact { _ in node.allocatedBlocks } == nil)
        fixture.fs.cache.remove(node.fileID)
        #expect(try blocks(fixture, ino) == 1, "a placeholder with nothing downloaded shows one block")
        #expect(fixture.fs.live.transact { _ in node.allocatedBlocks } == nil, "placeholders are measured every time")
    }

    /// readdirplus takes a page's attributes in one transaction: one reference per child
    /// returned, none for `.` and `..`, nil for a child gone since the snapshot.
    @Test func readdirPlusEntriesCountOneReferencePerChild() throws {
        let fixture = try FileSystemFixture()
        let a = try fixture.makeFile("a")
        let b = try fixture.makeFile("b")
        let d = try fixture.mkdir("d")
        for ino in [a, b, d] { fixture.fs.forget(ino, count: 1) }
        let handle = try fixture.fs.listings.opendir(.root)
        defer { fixture.fs.listings.releasedir(handle) }
        let entries = try fixture.fs.listings.readdir(handle, offset: 0)
        #expect(entries.map(\.isDot) == [true, true, false, false, false])
        try fixture.fs.unlink(parent: .root, name: FileName("b"))
        let replies = fixture.fs.listings.readdirPlusEntries(entries)
        #expect(replies.map { $0?.attributes.ino } == [nil, nil, a, nil, d])
        #expect(replies[2]?.attributes.kind == .file && replies[4]?.attributes.kind == .directory)
        let counts = fixture.fs.live.transact { tree in [a, b, d].map { tree.inodes.lookupCount($0) } }
        #expect(counts == [1, 0, 1])
    }
}
