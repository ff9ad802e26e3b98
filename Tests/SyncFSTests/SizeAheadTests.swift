import Foundation
import Glibc
import SyncBackend
import Testing

@testable import SyncFS

/// A file's recorded size never runs ahead of its cache file (`TreeTransaction.commitSizeAhead`):
/// right after a truncation or a save-by-rename, the database as a crash would find it (read
/// through a store of its own, while the fixture's flusher waits `slowBatchDelay`) records no
/// file longer than its cache file — so a short cache file at mount is damage, never a change
/// the crash kept from being recorded (doc/SEMANTICS.md "Lost local content").
@Suite("SyncFileSystem: the recorded size never runs ahead of the cache file")
struct SizeAheadTests {
    /// The committed file entries whose cache file is shorter than their recorded size, with
    /// both sizes, and whether each file's change is queued in the committed outbox.
    static func committed(_ fixture: FileSystemFixture) throws -> (tooLong: [String], queued: Set<FileID>) {
        let reader = try MetadataStore(path: fixture.databasePath)
        defer { try? reader.close() }
        let state = try reader.load()
        var tooLong: [String] = []
        for entry in state.entries where entry.kind == .file && !entry.isPlaceholder {
            let onDisk = fixture.fs.cache.size(of: entry.fileID) ?? -1
            if onDisk < entry.size { tooLong.append("\(entry.name): recorded \(entry.size), cache file \(onDisk)") }
        }
        return (tooLong, Set(state.outbox.map(\.fileID)))
    }

    @Test func aTruncationCommitsTheSmallerSizeBeforeTheCacheFileShrinks() throws {
        let fixture = try FileSystemFixture(batchDelay: slowBatchDelay)
        let truncated = try fixture.makeFile("truncated", contents: bytes("0123456789"))
        let opened = try fixture.makeFile("opened", contents: bytes("abcdef"))
        try fixture.fs.store.commit(durable: false)

        var changes = AttributeChanges()
        changes.size = 4
        _ = try fixture.fs.setattr(truncated, changes, handle: nil, caller: testCaller)
        let handle = try fixture.fs.open(opened, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        fixture.fs.fileIO.release(handle)

        let (tooLong, queued) = try Self.committed(fixture)
        #expect(tooLong.isEmpty, "\(tooLong)")
        for ino in [truncated, opened] {
            #expect(queued.contains(try #require(fixture.fileID(of: ino))), "the truncation is queued with its size")
        }
    }

    /// An editor's save: a new, shorter file renamed over one with an edit queued. The replaced
    /// file's path holds the new bytes from the rename on; its recorded size must not be the
    /// old, longer one.
    @Test func aShorterSaveByRenameCommitsTheSmallerSizeFirst() throws {
        let fixture = try FileSystemFixture(batchDelay: slowBatchDelay)
        _ = try fixture.makeFile("doc.txt", contents: bytes(String(repeating: "old content\n", count: 50)))
        _ = try fixture.makeFile("doc.txt.tmp", contents: bytes("new\n"))
        try fixture.fs.store.commit(durable: false)

        try fixture.fs.rename(
            parent: .root, name: FileName("doc.txt.tmp"), newParent: .root, newName: FileName("doc.txt"), flags: [])

        let (tooLong, _) = try Self.committed(fixture)
        #expect(tooLong.isEmpty, "\(tooLong)")
        #expect(fixture.fs.cache.size(of: try #require(fixture.fileID(of: fixture.lookupIno("doc.txt")))) == 4)
    }

    /// A cache file cut short while the daemon was stopped is damage, not a truncation: the
    /// modified file is `lost` — its size kept, reads fail, never uploaded shorter.
    @Test func aCacheFileCutShortWhileStoppedMakesAModifiedFileLost() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("0123456789"))
        let path = try #require(fixture.cacheFilePath(of: ino))
        try fixture.reopen { #expect(truncate(path, 3) == 0) }
        #expect(try fixture.fs.getattr(ino).size == 10)
        #expect(try fixture.fs.xattrs.get(ino, name: "user.syncfs.state") == bytes("error"))
        let handle = try fixture.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { fixture.fs.fileIO.release(handle) }
        #expect(throws: FSError.io(EIO)) { try fixture.fs.residency.ensureContent(handle, offset: 0, count: 4) }
        #expect(access(path, F_OK) == 0, "the remains stay in the cache")
    }
}
