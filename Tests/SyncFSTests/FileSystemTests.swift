import Foundation
import Glibc
import Testing

@testable import SyncFS

@Suite("SyncFileSystem: entries, attributes, content")
struct FileSystemTests {
    @Test func aNewFolderHasAnEmptyRoot() throws {
        let fixture = try FileSystemFixture()
        let root = try fixture.fs.getattr(.root)
        #expect(root.ino == .root)
        #expect(root.kind == .directory)
        #expect(root.nlink == 2)
        #expect(try fixture.childNames().isEmpty)
    }

    @Test func mkdirThenLookupAndGetattr() throws {
        let fixture = try FileSystemFixture()
        let reply = try fixture.fs.mkdir(parent: .root, name: FileName("docs"), mode: 0o750, caller: testCaller)
        let made = reply.attributes
        #expect(made.kind == .directory)
        #expect(made.ino != .root)
        #expect(made.mode == 0o750)
        #expect(made.uid == testCaller.uid)
        #expect(made.gid == testCaller.gid)
        #expect(made.nlink == 2)

        let found = try fixture.fs.lookup(parent: .root, name: FileName("docs"))
        #expect(found.attributes.ino == made.ino)
        #expect(found.generation == reply.generation)
        #expect(try fixture.fs.getattr(made.ino) == found.attributes)
        #expect(try fixture.fs.getattr(.root).nlink == 3, "a subdirectory adds a link to its parent")
        #expect(try fixture.childNames() == ["docs"])
    }

    @Test func mkdirKeepsOnlyPermissionBits() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.mkdir("d", mode: UInt32(S_IFDIR) | 0o1777)
        #expect(try fixture.fs.getattr(ino).mode == 0o1777)
    }

    @Test func nestedEntriesGetDistinctInodes() throws {
        let fixture = try FileSystemFixture()
        let a = try fixture.mkdir("a")
        let b = try fixture.mkdir("b", in: a)
        let file = try fixture.makeFile("f", in: b)
        #expect(Set([a, b, file, .root]).count == 4)
        #expect(try fixture.lookupIno("b", in: a) == b)
        #expect(try fixture.lookupIno("f", in: b) == file)
        #expect(try fixture.childNames(of: a) == ["b"])
        #expect(try fixture.fs.getattr(a).nlink == 3)
        #expect(try fixture.fs.getattr(b).nlink == 2, "files do not add links")
    }

    @Test func createMakesAnEmptyFileWithACacheFile() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("new.txt"), mode: 0o640, flags: O_CREAT | O_WRONLY, caller: testCaller)
        defer { fixture.fs.fileIO.release(handle) }
        let attributes = reply.attributes
        #expect(attributes.kind == .file)
        #expect(attributes.size == 0)
        #expect(attributes.nlink == 1)
        #expect(attributes.mode == 0o640)
        #expect(attributes.uid == testCaller.uid && attributes.gid == testCaller.gid)
        #expect(handle.writable)
        #expect(handle.ino == attributes.ino)
        #expect(fixture.cacheContents(of: attributes.ino) == [])
        #expect(try fixture.lookupIno("new.txt") == attributes.ino)
    }

    @Test func lookupFailures() throws {
        let fixture = try FileSystemFixture()
        let file = try fixture.makeFile("f")
        #expect(throws: FSError.notFound) { try fixture.fs.lookup(parent: .root, name: FileName("missing")) }
        #expect(throws: FSError.notDirectory) { try fixture.fs.lookup(parent: file, name: FileName("x")) }
        #expect(throws: FSError.notFound) { try fixture.fs.lookup(parent: InodeNumber(9999), name: FileName("x")) }
        #expect(throws: FSError.notFound) { try fixture.fs.getattr(InodeNumber(9999)) }
    }

    @Test func existingNamesAreRefused() throws {
        let fixture = try FileSystemFixture()
        try fixture.mkdir("d")
        try fixture.makeFile("f")
        #expect(throws: FSError.exists) { try fixture.mkdir("d") }
        #expect(throws: FSError.exists) { try fixture.mkdir("f") }
        #expect(throws: FSError.exists) {
            try fixture.fs.opener.create(
                parent: .root, name: FileName("f"), mode: 0o644, flags: O_CREAT | O_EXCL | O_RDWR, caller: testCaller)
        }
        #expect(throws: FSError.isDirectory) {
            try fixture.fs.opener.create(
                parent: .root, name: FileName("d"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        }
    }

    @Test func lookupCountsKernelReferences() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.mkdir("d")  // mkdir's reply counts once
        _ = try fixture.fs.lookup(parent: .root, name: FileName("d"))
        _ = try fixture.fs.lookup(parent: .root, name: FileName("d"))
        #expect(fixture.fs.live.transact { $0.inodes.lookupCount(ino) } == 3)
        fixture.fs.forget(ino, count: 3)
        #expect(fixture.fs.live.transact { $0.inodes.lookupCount(ino) } == 0)
        #expect(try fixture.fs.getattr(ino).kind == .directory, "a linked node stays when forgotten")
    }

    // MARK: Content

    @Test func writeThroughAnOpenFileReachesTheCacheFile() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("data"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        let ino = reply.attributes.ino
        try fixture.write(handle, bytes("hello world"), at: 0)
        #expect(try fixture.fs.getattr(ino).size == 11)
        try fixture.write(handle, bytes("HELLO"), at: 0)
        #expect(try fixture.fs.getattr(ino).size == 11, "overwriting inside the file keeps its size")
        try fixture.write(handle, bytes("end"), at: 20)
        #expect(try fixture.fs.getattr(ino).size == 23)
        #expect(readBytes(handle.descriptor, count: 100, at: 0).count == 23)
        fixture.fs.fileIO.release(handle)

        let expected = bytes("HELLO world") + [UInt8](repeating: 0, count: 9) + bytes("end")
        #expect(fixture.cacheContents(of: ino) == expected)
        #expect(try fixture.fs.getattr(ino).size == Int64(expected.count))
    }

    @Test func flushRecordsTheSizeInTheStore() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("data"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        try fixture.write(handle, [UInt8](repeating: 7, count: 4096), at: 0)
        fixture.fs.fileIO.flush(handle)
        let stored = try fixture.fs.store.load().entries.first { $0.ino == reply.attributes.ino }
        #expect(stored?.size == 4096)
        fixture.fs.fileIO.release(handle)
    }

    @Test func openWithTruncateEmptiesTheFile() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("some content"))
        #expect(try fixture.fs.getattr(ino).size == 12)
        let handle = try fixture.fs.open(ino, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        fixture.fs.fileIO.release(handle)
        #expect(try fixture.fs.getattr(ino).size == 0)
        #expect(fixture.cacheContents(of: ino) == [])
    }

    @Test func openOfADirectoryOrSymlinkIsRefused() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        let link = try fixture.fs.symlink(target: bytes("d"), parent: .root, name: FileName("l"), caller: testCaller)
        #expect(throws: FSError.isDirectory) { try fixture.fs.open(directory, flags: O_RDONLY, caller: testCaller) }
        #expect(throws: FSError.loop) { try fixture.fs.open(link.attributes.ino, flags: O_RDONLY, caller: testCaller) }
        #expect(try fixture.fs.readlink(link.attributes.ino) == bytes("d"))
        #expect(link.attributes.size == 1)
    }

    /// `create` finds an existing entry when a concurrent create won the race; a symlink there
    /// must not be opened as a regular file (`open` refuses it with ELOOP).
    @Test func createOverAnExistingSymlinkDoesNotOpenTheSymlink() throws {
        let fixture = try FileSystemFixture()
        let link = try fixture.fs.symlink(
            target: bytes("elsewhere"), parent: .root, name: FileName("l"), caller: testCaller
        ).attributes.ino
        var handle: OpenFile?
        #expect(throws: FSError.self) {
            handle = try fixture.fs.opener.create(
                parent: .root, name: FileName("l"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller
            ).1
        }
        if let handle { fixture.fs.fileIO.release(handle) }
        #expect(fixture.cacheContents(of: link) == nil, "a symlink has no cache file")
        #expect(try fixture.fs.readlink(link) == bytes("elsewhere"))
        #expect(try fixture.fs.getattr(link).kind == .symlink)
    }

    @Test func truncateThroughSetattr() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("0123456789"))
        var changes = AttributeChanges()
        changes.size = 4
        #expect(try fixture.fs.setattr(ino, changes, handle: nil).size == 4)
        #expect(fixture.cacheContents(of: ino) == bytes("0123"))
        changes.size = 8
        #expect(try fixture.fs.setattr(ino, changes, handle: nil).size == 8)
        #expect(fixture.cacheContents(of: ino) == bytes("0123") + [0, 0, 0, 0])
    }

    // MARK: Names

    @Test func namesOfUpTo255BytesAreAccepted() throws {
        let fixture = try FileSystemFixture()
        let longest = String(repeating: "n", count: FileName.maxLength)
        let ino = try fixture.mkdir(longest)
        #expect(try fixture.lookupIno(longest) == ino)
        let multibyte = String(repeating: "é", count: 127)  // 254 bytes
        #expect(throws: Never.self) { try fixture.makeFile(multibyte) }
    }

    @Test func nameOf256BytesIsTooLong() throws {
        let fixture = try FileSystemFixture()
        let name = FileName(String(repeating: "n", count: 256))
        try fixture.makeFile("f")
        #expect(throws: FSError.nameTooLong) {
            try fixture.fs.mkdir(parent: .root, name: name, mode: 0o755, caller: testCaller)
        }
        #expect(throws: FSError.nameTooLong) {
            try fixture.fs.opener.create(
                parent: .root, name: name, mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        }
        #expect(throws: FSError.nameTooLong) { try fixture.fs.lookup(parent: .root, name: name) }
        #expect(throws: FSError.nameTooLong) {
            try fixture.fs.rename(parent: .root, name: FileName("f"), newParent: .root, newName: name, flags: [])
        }
        #expect(throws: FSError.nameTooLong) {
            try fixture.fs.symlink(target: bytes("f"), parent: .root, name: name, caller: testCaller)
        }
        #expect(try fixture.childNames() == ["f"])
    }

    /// Raw name bytes: "a/b", "/", ".", "..", "", and a name with a NUL byte.
    @Test(arguments: [bytes("a/b"), bytes("/"), bytes("."), bytes(".."), [], bytes("nul") + [0] + bytes("byte")])
    func invalidNamesAreRefused(_ raw: [UInt8]) throws {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("f")
        let name = FileName(bytes: raw)
        #expect(throws: FSError.invalidArgument) {
            try fixture.fs.mkdir(parent: .root, name: name, mode: 0o755, caller: testCaller)
        }
        #expect(throws: FSError.invalidArgument) {
            try fixture.fs.opener.create(
                parent: .root, name: name, mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        }
        #expect(throws: FSError.invalidArgument) {
            try fixture.fs.rename(parent: .root, name: FileName("f"), newParent: .root, newName: name, flags: [])
        }
        #expect(try fixture.childNames() == ["f"])
    }

    @Test func namesNeedNotBeUTF8() throws {
        let fixture = try FileSystemFixture()
        let raw = FileName(bytes: [0xff, 0xfe, 0x80])
        let reply = try fixture.fs.mkdir(parent: .root, name: raw, mode: 0o755, caller: testCaller)
        #expect(try fixture.fs.lookup(parent: .root, name: raw).attributes.ino == reply.attributes.ino)
    }

    // MARK: Refused kinds

    @Test func hardLinksAndSpecialFilesAreRefused() throws {
        let fixture = try FileSystemFixture()
        #expect(throws: FSError.notPermitted) { try fixture.fs.link() }
        for type in [S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK] {
            #expect(throws: FSError.notPermitted) {
                try fixture.fs.mknod(parent: .root, name: FileName("n"), mode: UInt32(type) | 0o644, caller: testCaller)
            }
        }
        let regular = try fixture.fs.mknod(
            parent: .root, name: FileName("n"), mode: UInt32(S_IFREG) | 0o644, caller: testCaller)
        #expect(regular.attributes.kind == .file)
        #expect(fixture.cacheContents(of: regular.attributes.ino) == [])
    }
}
