import Foundation
import Glibc
import SyncBackend
import Testing

@testable import SyncFS

@Suite("SyncFileSystem: persistence across remounts and crash repair")
struct PersistenceTests {
    @Test func aRemountShowsTheSameTree() throws {
        let fixture = try FileSystemFixture()
        let docs = try fixture.mkdir("docs", mode: 0o750)
        let nested = try fixture.mkdir("nested", in: docs)
        let file = try fixture.makeFile("a.txt", in: docs, contents: bytes("hello, world"))
        let empty = try fixture.makeFile("empty", in: nested)
        let link = try fixture.fs.symlink(
            target: bytes("docs/a.txt"), parent: .root, name: FileName("link"), caller: testCaller
        ).attributes.ino
        let raw = try fixture.fs.mkdir(
            parent: .root, name: FileName(bytes: [0xff, 0x41]), mode: 0o700, caller: testCaller
        ).attributes.ino
        try fixture.fs.xattrs.set(file, name: "user.colour", value: bytes("blue"), mode: .any)
        try fixture.fs.xattrs.set(docs, name: "user.tag", value: [0, 1, 2], mode: .any)
        try fixture.fs.xattrs.set(file, name: "user.gone", value: [1], mode: .any)
        try fixture.fs.xattrs.remove(file, name: "user.gone")
        let ids = [docs, nested, file, empty, link, raw].map { fixture.fileID(of: $0) }
        let before = try [InodeNumber.root, docs, nested, file, empty, link, raw].map { try fixture.fs.getattr($0) }

        try fixture.reopen()

        #expect(
            try fixture.childNames() == ["docs", "link", String(decoding: [0xff, 0x41] as [UInt8], as: UTF8.self)])
        #expect(try fixture.lookupIno("docs") == docs)
        #expect(try fixture.lookupIno("nested", in: docs) == nested)
        #expect(try fixture.lookupIno("a.txt", in: docs) == file)
        #expect(try fixture.lookupIno("empty", in: nested) == empty)
        #expect(try fixture.lookupIno("link") == link)
        #expect(try fixture.fs.lookup(parent: .root, name: FileName(bytes: [0xff, 0x41])).attributes.ino == raw)
        let after = try [InodeNumber.root, docs, nested, file, empty, link, raw].map { try fixture.fs.getattr($0) }
        #expect(after == before)
        #expect([docs, nested, file, empty, link, raw].map { fixture.fileID(of: $0) } == ids)
        #expect(try fixture.fs.readlink(link) == bytes("docs/a.txt"))
        #expect(try fixture.fs.xattrs.get(file, name: "user.colour") == bytes("blue"))
        #expect(try fixture.fs.xattrs.get(docs, name: "user.tag") == [0, 1, 2])
        #expect(try fixture.fs.xattrs.list(file) == ["user.colour"])
        #expect(fixture.cacheContents(of: file) == bytes("hello, world"))
        let handle = try fixture.fs.open(file, flags: O_RDONLY, caller: testCaller)
        #expect(readBytes(handle.descriptor, count: 64, at: 0) == bytes("hello, world"))
        fixture.fs.fileIO.release(handle)
    }

    @Test func renamesUnlinksAndExchangesSurviveARemount() throws {
        let fixture = try FileSystemFixture()
        let a = try fixture.makeFile("a", contents: bytes("A"))
        let b = try fixture.makeFile("b", contents: bytes("B"))
        let c = try fixture.makeFile("c", contents: bytes("C"))
        let d = try fixture.mkdir("d")
        try fixture.fs.rename(parent: .root, name: FileName("a"), newParent: d, newName: FileName("a2"), flags: [])
        try fixture.fs.rename(parent: .root, name: FileName("b"), newParent: .root, newName: FileName("c"), flags: [])
        try fixture.fs.rename(
            parent: .root, name: FileName("c"), newParent: d, newName: FileName("a2"), flags: .exchange)
        try fixture.makeFile("removed")
        try fixture.fs.unlink(parent: .root, name: FileName("removed"))

        try fixture.reopen()

        #expect(try fixture.childNames() == ["c", "d"])
        #expect(try fixture.childNames(of: d) == ["a2"])
        #expect(try fixture.lookupIno("c") == a)
        #expect(try fixture.lookupIno("a2", in: d) == b)
        #expect(fixture.cacheContents(of: a) == bytes("A"))
        #expect(fixture.cacheContents(of: b) == bytes("B"))
        #expect(!fixture.isLoaded(c), "the replaced file is gone")
    }

    @Test func writesWithoutAFlushAreRecordedAtShutDown() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("f"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        let ino = reply.attributes.ino
        try fixture.write(handle, bytes("unflushed"), at: 0)
        try fixture.shutDown()
        let stored = try MetadataStore(path: fixture.databasePath)
        defer { try? stored.close() }
        #expect(try stored.load().entries.first { $0.ino == ino }?.size == 9)
        close(handle.descriptor)
    }

    @Test func generationIsTheMountCount() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.mkdir("d")
        let first = try fixture.fs.lookup(parent: .root, name: FileName("d")).generation
        try fixture.reopen()
        let second = try fixture.fs.lookup(parent: .root, name: FileName("d")).generation
        try fixture.reopen()
        let third = try fixture.fs.lookup(parent: .root, name: FileName("d")).generation
        #expect(second == first + 1)
        #expect(third == second + 1)
        #expect(fixture.fs.live.transact { $0.inodes.generation } == third)
        #expect(try fixture.lookupIno("d") == ino)
    }

    @Test func newEntriesAfterARemountGetNewInodeNumbers() throws {
        let fixture = try FileSystemFixture()
        let a = try fixture.makeFile("a")
        let b = try fixture.mkdir("b")
        try fixture.reopen()
        let c = try fixture.makeFile("c")
        #expect(![InodeNumber.root, a, b].contains(c))
        #expect(c > b)
    }

    /// Inode numbers are never reused while a state directory lives (`InodeTable`'s contract,
    /// "a counter stored with the entries"): not even the number of the newest entry, removed
    /// before the remount.
    @Test func inodeNumbersOfRemovedEntriesAreNotReusedAfterARemount() throws {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("kept")
        let removed = try fixture.makeFile("removed")
        try fixture.fs.unlink(parent: .root, name: FileName("removed"))
        fixture.fs.forget(removed, count: 1)
        try fixture.reopen()
        let fresh = try fixture.makeFile("fresh")
        #expect(fresh != removed, "inode number \(removed.rawValue) was given out again")
        #expect(fresh > removed)
    }

    // MARK: Crash repair at load

    @Test func aCacheFileWithoutAnEntryIsRemoved() throws {
        let fixture = try FileSystemFixture()
        let kept = try fixture.makeFile("kept", contents: bytes("keep me"))
        let stray = FileID.random()
        let strayPath = ContentCache.pathForTests(fixture.cachePath, stray)
        try fixture.reopen {
            let cache = try ContentCache(directory: fixture.cachePath)
            try cache.create(stray)
            #expect(access(strayPath, F_OK) == 0)
        }
        #expect(access(strayPath, F_OK) != 0, "the stray cache file is removed at load")
        #expect(fixture.cacheContents(of: kept) == bytes("keep me"))
        #expect(try fixture.childNames() == ["kept"])
    }

    @Test func aLongerCacheFileGivesTheEntryItsSize() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("12345"))
        let path = try #require(fixture.cacheFilePath(of: ino))
        try fixture.reopen {
            // Bytes the kernel wrote whose size change was never committed (a crash).
            let fd = open(path, O_WRONLY)
            #expect(fd >= 0)
            let tail = bytes("67890abc")
            #expect(tail.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, 5) } == tail.count)
            close(fd)
        }
        #expect(try fixture.fs.getattr(ino).size == 13)
        #expect(fixture.cacheContents(of: ino) == bytes("1234567890abc"))
        #expect(try fixture.fs.store.load().entries.first { $0.ino == ino }?.size == 13, "the repair is stored")
    }

    /// A missing cache file of an unsynced file no longer leaves an empty file (which then
    /// uploaded if queued): the file is `lost`, its size kept, reads fail.
    @Test func aMissingCacheFileMakesAModifiedFileLost() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("lost"))
        let path = try #require(fixture.cacheFilePath(of: ino))
        try fixture.reopen { #expect(unlink(path) == 0) }
        #expect(try fixture.fs.getattr(ino).size == 4)
        #expect(try fixture.fs.xattrs.get(ino, name: "user.syncfs.state") == bytes("error"))
        let handle = try fixture.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { fixture.fs.fileIO.release(handle) }
        #expect(throws: FSError.io(EIO)) { try fixture.fs.residency.ensureContent(handle, offset: 0, count: 4) }
    }

    @Test func entriesOutsideTheTreeAreRemovedAtLoad() throws {
        let fixture = try FileSystemFixture()
        let kept = try fixture.makeFile("kept")
        let orphan = InodeNumber(900)
        let child = InodeNumber(901)
        try fixture.reopen {
            let store = try MetadataStore(path: fixture.databasePath)
            store.entryCreated(
                sampleRecord(orphan.rawValue, parent: InodeNumber(777), name: "orphan", kind: .directory))
            store.entryCreated(sampleRecord(child.rawValue, parent: orphan, name: "child"))
            store.xattrSet(child, name: "user.k", value: [1])
            try store.close()
        }
        #expect(!fixture.isLoaded(orphan))
        #expect(!fixture.isLoaded(child))
        #expect(fixture.isLoaded(kept))
        let stored = try fixture.fs.store.load()
        #expect(!stored.entries.contains { $0.ino == orphan || $0.ino == child })
        #expect(stored.xattrs[child] == nil)
    }
}

extension ContentCache {
    /// Where the cache under `directory` keeps `id` (without creating the cache).
    static func pathForTests(_ directory: String, _ id: FileID) -> String {
        directory + "/" + id.hex.prefix(2) + "/" + id.hex
    }
}
