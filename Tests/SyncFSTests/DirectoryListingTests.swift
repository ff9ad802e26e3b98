import Glibc
import Testing

@testable import SyncFS

@Suite("SyncFileSystem: directory listings and fsync")
struct DirectoryListingTests {
    func names(_ entries: ArraySlice<OpenDirectory.Entry>) -> [String] { entries.map(\.name.description) }

    @Test func aListingIsASortedSnapshot() throws {
        let fixture = try FileSystemFixture()
        let b = try fixture.makeFile("b")
        let a = try fixture.mkdir("a")
        let handle = try fixture.fs.listings.opendir(.root)
        defer { fixture.fs.listings.releasedir(handle) }
        let entries = try fixture.fs.listings.readdir(handle, offset: 0)
        #expect(names(entries) == [".", "..", "a", "b"])
        #expect(entries.map(\.ino) == [.root, .root, a, b])
        #expect(entries.map(\.kind) == [.directory, .directory, .directory, .file])

        try fixture.makeFile("c")
        try fixture.fs.unlink(parent: .root, name: FileName("b"))
        #expect(
            names(try fixture.fs.listings.readdir(handle, offset: 2)) == ["a", "b"], "continuing keeps the snapshot")
        #expect(try fixture.fs.listings.readdir(handle, offset: 4).isEmpty)
        #expect(
            names(try fixture.fs.listings.readdir(handle, offset: 0)) == [".", "..", "a", "c"], "offset 0 refreshes")
    }

    @Test func theFirstReadAtANonZeroOffsetTakesASnapshot() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        try fixture.makeFile("x", in: directory)
        try fixture.makeFile("y", in: directory)
        let handle = try fixture.fs.listings.opendir(directory)
        defer { fixture.fs.listings.releasedir(handle) }
        let entries = try fixture.fs.listings.readdir(handle, offset: 3)
        #expect(names(entries) == ["y"])
        #expect(entries.first?.ino == (try fixture.lookupIno("y", in: directory)))
    }

    @Test func dotDotIsTheParent() throws {
        let fixture = try FileSystemFixture()
        let parent = try fixture.mkdir("p")
        let child = try fixture.mkdir("c", in: parent)
        let handle = try fixture.fs.listings.opendir(child)
        defer { fixture.fs.listings.releasedir(handle) }
        let entries = try fixture.fs.listings.readdir(handle, offset: 0)
        #expect(entries.map(\.ino) == [child, parent])
    }

    @Test func opendirOfAFileIsRefused() throws {
        let fixture = try FileSystemFixture()
        let file = try fixture.makeFile("f")
        #expect(throws: FSError.notDirectory) { try fixture.fs.listings.opendir(file) }
    }

    @Test func readdirPlusCountsAReferencePerEntry() throws {
        let fixture = try FileSystemFixture()
        let file = try fixture.makeFile("f")
        fixture.fs.forget(file, count: 1)
        let handle = try fixture.fs.listings.opendir(.root)
        defer { fixture.fs.listings.releasedir(handle) }
        let entry = try #require(try fixture.fs.listings.readdir(handle, offset: 0).first { $0.ino == file })
        let reply = try #require(fixture.fs.listings.readdirPlusEntry(entry))
        #expect(reply.attributes.ino == file)
        #expect(fixture.fs.live.transact { $0.inodes.lookupCount(file) } == 1)
    }

    @Test func fsyncMakesTheWrittenSizeDurable() throws {
        let fixture = try FileSystemFixture()
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("f"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        try fixture.write(handle, [UInt8](repeating: 1, count: 1000), at: 0)
        try fixture.fs.fileIO.fsync(handle, dataOnly: false)
        // A second reader of the database sees what fsync committed.
        let reader = try MetadataStore(path: fixture.databasePath)
        defer { try? reader.close() }
        #expect(try reader.load().entries.first { $0.ino == reply.attributes.ino }?.size == 1000)
        try fixture.fs.fileIO.fsync(handle, dataOnly: true)
        fixture.fs.fileIO.release(handle)
    }

    @Test func statfsCountsNodes() throws {
        let fixture = try FileSystemFixture()
        let before = try fixture.fs.statfs()
        try fixture.mkdir("d")
        try fixture.makeFile("f")
        let after = try fixture.fs.statfs()
        #expect(before.nameMax == 255)
        #expect(after.files - after.filesFree == before.files - before.filesFree + 2)
    }
}
