import Glibc
import Testing

@testable import SyncFS

@Suite("SyncFileSystem: unlink, rmdir, and the life of unlinked nodes")
struct UnlinkTests {
    @Test func unlinkOfAClosedFileRemovesItOnceForgotten() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("x"))  // create's reply counted once
        let cache = try #require(fixture.cacheFilePath(of: ino))
        try fixture.fs.unlink(parent: .root, name: FileName("f"))
        #expect(throws: FSError.notFound) { try fixture.lookupIno("f") }
        #expect(try fixture.childNames().isEmpty)
        #expect(try fixture.fs.getattr(ino).nlink == 0, "the kernel may still name it")
        fixture.fs.forget(ino, count: 1)
        #expect(!fixture.isLoaded(ino))
        try fixture.fs.fsyncdir()
        #expect(access(cache, F_OK) != 0)
    }

    @Test func unlinkOfAnOpenFileKeepsTheNodeUntilReleaseAndForget() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("open"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        let ino = reply.attributes.ino
        try fixture.write(handle, bytes("before"), at: 0)
        let cache = try #require(fixture.cacheFilePath(of: ino))
        try fixture.fs.unlink(parent: .root, name: FileName("open"))

        #expect(throws: FSError.notFound) { try fixture.lookupIno("open") }
        #expect(try fixture.fs.getattr(ino).nlink == 0)
        // Still readable and writable through the open handle.
        #expect(readBytes(handle.descriptor, count: 64, at: 0) == bytes("before"))
        try fixture.write(handle, bytes(" after"), at: 6)
        #expect(try fixture.fs.getattr(ino).size == 12)
        #expect(readBytes(handle.descriptor, count: 64, at: 0) == bytes("before after"))

        fixture.fs.fileIO.release(handle)
        #expect(fixture.isLoaded(ino), "the kernel still holds a lookup reference")
        try fixture.fs.fsyncdir()
        #expect(access(cache, F_OK) == 0, "content stays while the node is referenced")

        fixture.fs.forget(ino, count: 1)
        #expect(!fixture.isLoaded(ino))
        #expect(throws: FSError.notFound) { try fixture.fs.getattr(ino) }
        try fixture.fs.fsyncdir()
        #expect(access(cache, F_OK) != 0, "the cache file goes once the node is dropped")
    }

    @Test func forgetBeforeReleaseKeepsTheNodeUntilTheLastClose() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("data"))
        let handle = try fixture.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        let second = try fixture.fs.open(ino, flags: O_RDWR, caller: testCaller)
        let cache = try #require(fixture.cacheFilePath(of: ino))
        try fixture.fs.unlink(parent: .root, name: FileName("f"))
        fixture.fs.forget(ino, count: 1)
        #expect(fixture.isLoaded(ino), "open handles keep the node")
        fixture.fs.fileIO.release(handle)
        #expect(fixture.isLoaded(ino), "one handle is still open")
        #expect(readBytes(second.descriptor, count: 16, at: 0) == bytes("data"))
        fixture.fs.fileIO.release(second)
        #expect(!fixture.isLoaded(ino))
        try fixture.fs.fsyncdir()
        #expect(access(cache, F_OK) != 0)
    }

    @Test func anUnlinkedFileIsNotRecordedAgain() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("f"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        try fixture.fs.unlink(parent: .root, name: FileName("f"))
        try fixture.write(handle, bytes("late write"), at: 0)
        fixture.fs.fileIO.release(handle)
        var changes = AttributeChanges()
        changes.mode = 0o600
        _ = try fixture.fs.setattr(reply.attributes.ino, changes, handle: nil)
        let stored = try fixture.fs.store.load()
        #expect(!stored.entries.contains { $0.ino == reply.attributes.ino })
    }

    @Test func unlinkAndRmdirCheckTheKind() throws {
        let fixture = try FileSystemFixture()
        try fixture.mkdir("d")
        try fixture.makeFile("f")
        #expect(throws: FSError.isDirectory) { try fixture.fs.unlink(parent: .root, name: FileName("d")) }
        #expect(throws: FSError.notDirectory) { try fixture.fs.rmdir(parent: .root, name: FileName("f")) }
        #expect(throws: FSError.notFound) { try fixture.fs.unlink(parent: .root, name: FileName("missing")) }
        #expect(throws: FSError.notFound) { try fixture.fs.rmdir(parent: .root, name: FileName("missing")) }
        #expect(try fixture.childNames() == ["d", "f"])
    }

    @Test func rmdirOfANonEmptyDirectoryIsRefused() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        try fixture.makeFile("f", in: directory)
        #expect(throws: FSError.notEmpty) { try fixture.fs.rmdir(parent: .root, name: FileName("d")) }
        try fixture.fs.unlink(parent: directory, name: FileName("f"))
        try fixture.fs.rmdir(parent: .root, name: FileName("d"))
        #expect(try fixture.childNames().isEmpty)
        #expect(try fixture.fs.getattr(.root).nlink == 2)
    }

    @Test func aRemovedDirectoryTakesNoNewEntries() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        let handle = try fixture.fs.listings.opendir(directory)
        defer { fixture.fs.listings.releasedir(handle) }
        try fixture.fs.rmdir(parent: .root, name: FileName("d"))
        #expect(try fixture.fs.getattr(directory).nlink == 0)
        #expect(throws: FSError.notFound) { try fixture.mkdir("x", in: directory) }
        #expect(throws: FSError.notFound) { try fixture.fs.lookup(parent: directory, name: FileName("x")) }
        let listed = try fixture.fs.listings.readdir(handle, offset: 0).map(\.name.description)
        #expect(listed == [".", ".."])
    }
}
