import Glibc
import SyncBackend
import Testing

@testable import SyncFS

@Suite("SyncFileSystem: rename and renameat2")
struct RenameTests {
    func rename(
        _ fixture: FileSystemFixture, _ name: String, in parent: InodeNumber = .root, to newName: String,
        into newParent: InodeNumber = .root, flags: RenameFlags = []
    ) throws(FSError) {
        try fixture.fs.rename(
            parent: parent, name: FileName(name), newParent: newParent, newName: FileName(newName), flags: flags)
    }

    @Test func renameWithinADirectoryKeepsInodeAndFileID() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("old", contents: bytes("content"))
        let id = fixture.fileID(of: ino)
        try rename(fixture, "old", to: "new")
        #expect(try fixture.lookupIno("new") == ino)
        #expect(throws: FSError.notFound) { try fixture.lookupIno("old") }
        #expect(fixture.fileID(of: ino) == id)
        #expect(fixture.cacheContents(of: ino) == bytes("content"))
        #expect(try fixture.childNames() == ["new"])
    }

    @Test func renameAcrossDirectoriesMovesSubdirectoryLinks() throws {
        let fixture = try FileSystemFixture()
        let from = try fixture.mkdir("from")
        let to = try fixture.mkdir("to")
        let moved = try fixture.mkdir("moved", in: from)
        #expect(try fixture.fs.getattr(from).nlink == 3)
        try rename(fixture, "moved", in: from, to: "here", into: to)
        #expect(try fixture.lookupIno("here", in: to) == moved)
        #expect(try fixture.childNames(of: from).isEmpty)
        #expect(try fixture.fs.getattr(from).nlink == 2)
        #expect(try fixture.fs.getattr(to).nlink == 3)
    }

    @Test func renameOverAFileReplacesIt() throws {
        let fixture = try FileSystemFixture()
        let source = try fixture.makeFile("a", contents: bytes("A"))
        let target = try fixture.makeFile("b", contents: bytes("BB"))
        let sourceCache = try #require(fixture.cacheFilePath(of: source))
        let targetID = fixture.fileID(of: target)
        let targetCache = try #require(fixture.cacheFilePath(of: target))
        try rename(fixture, "a", to: "b")
        let now = try fixture.fs.lookup(parent: .root, name: FileName("b")).attributes
        #expect(now.ino == source)
        #expect(now.size == 1)
        // Save-by-rename: the never-synced replacement takes over the replaced file's identity.
        #expect(fixture.fileID(of: source) == targetID)
        #expect(fixture.cacheContents(of: source) == bytes("A"))
        #expect(fixture.cacheFilePath(of: source) == targetCache)
        #expect(try fixture.childNames() == ["b"])
        // The replaced file lives on while the kernel refers to it (its create counted once).
        #expect(try fixture.fs.getattr(target).nlink == 0)
        fixture.fs.forget(target, count: 1)
        #expect(!fixture.isLoaded(target))
        try fixture.fs.fsyncdir()
        #expect(access(sourceCache, F_OK) != 0, "the replacement's old cache path is gone")
        #expect(access(targetCache, F_OK) == 0, "the identity's cache file holds the new content")
    }

    @Test func renameOverAnEmptyDirectoryReplacesIt() throws {
        let fixture = try FileSystemFixture()
        let source = try fixture.mkdir("a")
        try fixture.makeFile("inside", in: source)
        let target = try fixture.mkdir("b")
        #expect(try fixture.fs.getattr(.root).nlink == 4)
        try rename(fixture, "a", to: "b")
        #expect(try fixture.lookupIno("b") == source)
        #expect(try fixture.childNames() == ["b"])
        #expect(try fixture.childNames(of: source) == ["inside"])
        #expect(try fixture.fs.getattr(.root).nlink == 3)
        #expect(try fixture.fs.getattr(target).nlink == 0)
    }

    @Test func renameOverANonEmptyDirectoryIsRefused() throws {
        let fixture = try FileSystemFixture()
        let source = try fixture.mkdir("a")
        let target = try fixture.mkdir("b")
        try fixture.makeFile("x", in: target)
        #expect(throws: FSError.notEmpty) { try rename(fixture, "a", to: "b") }
        #expect(try fixture.lookupIno("a") == source)
        #expect(try fixture.lookupIno("b") == target)
        #expect(try fixture.childNames(of: target) == ["x"])
    }

    @Test func renameBetweenFileAndDirectoryIsRefused() throws {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("file")
        try fixture.mkdir("dir")
        #expect(throws: FSError.isDirectory) { try rename(fixture, "file", to: "dir") }
        #expect(throws: FSError.notDirectory) { try rename(fixture, "dir", to: "file") }
        #expect(try fixture.childNames() == ["dir", "file"])
    }

    @Test func directoryIntoItsOwnSubtreeIsRefused() throws {
        let fixture = try FileSystemFixture()
        let top = try fixture.mkdir("top")
        let middle = try fixture.mkdir("middle", in: top)
        #expect(throws: FSError.invalidArgument) { try rename(fixture, "top", to: "x", into: middle) }
        #expect(throws: FSError.invalidArgument) { try rename(fixture, "top", to: "x", into: top) }
        #expect(try fixture.lookupIno("top") == top)
        #expect(try fixture.childNames(of: middle).isEmpty)
        #expect(try fixture.childNames(of: top) == ["middle"])
    }

    @Test func renameOntoItselfChangesNothing() throws {
        let fixture = try FileSystemFixture()
        let file = try fixture.makeFile("f", contents: bytes("x"))
        let directory = try fixture.mkdir("d")
        try rename(fixture, "f", to: "f")
        try rename(fixture, "d", to: "d")
        #expect(try fixture.lookupIno("f") == file)
        #expect(try fixture.lookupIno("d") == directory)
        #expect(try fixture.fs.getattr(file).nlink == 1)
    }

    @Test func renameOfAMissingEntryFails() throws {
        let fixture = try FileSystemFixture()
        let file = try fixture.makeFile("f")
        #expect(throws: FSError.notFound) { try rename(fixture, "missing", to: "x") }
        #expect(throws: FSError.notDirectory) { try rename(fixture, "f", to: "x", into: file) }
    }

    @Test func noReplaceRefusesAnExistingTarget() throws {
        let fixture = try FileSystemFixture()
        let a = try fixture.makeFile("a")
        let b = try fixture.makeFile("b")
        #expect(throws: FSError.exists) { try rename(fixture, "a", to: "b", flags: .noReplace) }
        #expect(try fixture.lookupIno("a") == a)
        #expect(try fixture.lookupIno("b") == b)
        try rename(fixture, "a", to: "c", flags: .noReplace)
        #expect(try fixture.lookupIno("c") == a)
    }

    @Test func conflictingOrUnknownFlagsAreRefused() throws {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("a")
        try fixture.makeFile("b")
        #expect(throws: FSError.invalidArgument) { try rename(fixture, "a", to: "b", flags: [.noReplace, .exchange]) }
        #expect(throws: FSError.invalidArgument) { try rename(fixture, "a", to: "b", flags: RenameFlags(rawValue: 4)) }
        #expect(try fixture.childNames() == ["a", "b"])
    }

    @Test func exchangeSwapsEntriesAndKeepsFileIDs() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("dir")
        let file = try fixture.makeFile("file", contents: bytes("data"))
        let sub = try fixture.mkdir("sub", in: directory)
        let fileID = fixture.fileID(of: file)
        let directoryID = fixture.fileID(of: directory)
        try rename(fixture, "file", to: "sub", into: directory, flags: .exchange)
        #expect(try fixture.lookupIno("file") == sub)
        #expect(try fixture.lookupIno("sub", in: directory) == file)
        #expect(fixture.fileID(of: file) == fileID)
        #expect(fixture.fileID(of: directory) == directoryID)
        #expect(fixture.cacheContents(of: file) == bytes("data"))
        #expect(try fixture.fs.getattr(.root).nlink == 4, "root now holds dir and sub")
        #expect(try fixture.fs.getattr(directory).nlink == 2, "dir now holds only a file")
        #expect(try fixture.fs.getattr(file).nlink == 1)
        #expect(try fixture.fs.getattr(sub).nlink == 2)
    }

    @Test func exchangeInOneDirectory() throws {
        let fixture = try FileSystemFixture()
        let a = try fixture.makeFile("a", contents: bytes("A"))
        let b = try fixture.makeFile("b", contents: bytes("B"))
        try rename(fixture, "a", to: "b", flags: .exchange)
        #expect(try fixture.lookupIno("a") == b)
        #expect(try fixture.lookupIno("b") == a)
        #expect(try fixture.childNames() == ["a", "b"])
    }

    @Test func exchangeNeedsAnExistingTarget() throws {
        let fixture = try FileSystemFixture()
        let a = try fixture.makeFile("a")
        #expect(throws: FSError.notFound) { try rename(fixture, "a", to: "b", flags: .exchange) }
        #expect(try fixture.lookupIno("a") == a)
    }

    @Test func exchangeOfADirectoryWithItsOwnDescendantIsRefused() throws {
        let fixture = try FileSystemFixture()
        let top = try fixture.mkdir("top")
        let inner = try fixture.makeFile("inner", in: top)
        #expect(throws: FSError.invalidArgument) {
            try rename(fixture, "top", to: "inner", into: top, flags: .exchange)
        }
        #expect(throws: FSError.invalidArgument) { try rename(fixture, "inner", in: top, to: "top", flags: .exchange) }
        #expect(try fixture.lookupIno("top") == top)
        #expect(try fixture.lookupIno("inner", in: top) == inner)
    }
}
