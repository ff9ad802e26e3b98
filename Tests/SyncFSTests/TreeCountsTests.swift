import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// `status`'s file counts are kept as the tree changes (`TreeCounts`), not walked for: after each
/// kind of change they must equal a walk of the tree, and say what the test made.
@Suite("Tree counts: status without a walk", .serialized)
struct TreeCountsTests {
    private func usage(_ fixture: FileSystemFixture, sourceLocation: SourceLocation = #_sourceLocation)
        -> CacheUsage
    {
        fixture.expectCountsAgreeWithWalk(sourceLocation: sourceLocation)
        return fixture.fs.residency.cacheUsage()
    }

    @Test func localChangesPinsMovesAndRemovalsKeepTheCountsExact() throws {
        let fixture = try FileSystemFixture()
        let docs = try fixture.mkdir("docs")
        let deep = try fixture.mkdir("deep", in: docs)
        for index in 0..<5 { try fixture.makeFile("f\(index)", in: deep, contents: bytes("12345")) }
        try fixture.makeFile("top", contents: bytes("abc"))
        var now = usage(fixture)
        #expect(now.localBytes == 28)
        #expect(now.files.local + now.files.modified + now.files.uploading == 6)
        #expect(now.files.pinned == 0)

        // Pinning a folder pins what lies below it; moving a folder out of it unpins its files.
        try fixture.fs.residency.setPinned(docs, true)
        #expect(usage(fixture).files.pinned == 5)
        try fixture.fs.rename(
            parent: docs, name: FileName("deep"), newParent: .root, newName: FileName("moved"), flags: [],
            caller: testCaller)
        #expect(usage(fixture).files.pinned == 0)
        try fixture.fs.rename(
            parent: .root, name: FileName("moved"), newParent: docs, newName: FileName("back"), flags: [],
            caller: testCaller)
        #expect(usage(fixture).files.pinned == 5)

        // A writer's bytes count while it writes, before its handle is closed.
        let handle = try fixture.fs.open(try fixture.lookupIno("top"), flags: O_WRONLY, caller: testCaller)
        try fixture.write(handle, [UInt8](repeating: 7, count: 100), at: 3)
        now = usage(fixture)
        #expect(now.localBytes == 128)
        #expect(now.files.modified >= 1)
        fixture.fs.fileIO.release(handle)
        #expect(usage(fixture).localBytes == 128)

        // Removing files and a file still open after its unlink.
        let back = try fixture.lookupIno("back", in: docs)
        let open = try fixture.fs.open(try fixture.lookupIno("f0", in: back), flags: O_RDONLY, caller: testCaller)
        for index in 0..<5 { try fixture.fs.unlink(parent: back, name: FileName("f\(index)"), caller: testCaller) }
        now = usage(fixture)
        #expect(now.localBytes == 103)
        #expect(now.files.pinned == 0)
        fixture.fs.fileIO.release(open)
        #expect(usage(fixture).localBytes == 103)

        // The counts a new mount starts with are the walk's too.
        try fixture.reopen()
        #expect(usage(fixture).localBytes == 103)
    }

    @Test func anEmptyPlaceholderTruncatedOnOpenCountsAsLocal() async throws {
        let pair = try SyncedPair()
        try pair.a.makeFile("empty")
        try await eventually("on B") { try pair.b.childNames() == ["empty"] }
        try await pair.settle()
        let ino = try pair.b.lookupIno("empty")
        #expect(pair.b.fs.live.transact { $0.nodes[ino]?.isPlaceholder } == true)
        #expect(usage(pair.b).files.online == 1)
        // Nothing is recorded for it: it stays empty.
        let handle = try pair.b.fs.open(ino, flags: O_RDONLY | O_TRUNC, caller: testCaller)
        pair.b.fs.fileIO.release(handle)
        #expect(usage(pair.b).files.local == 1)
        #expect(usage(pair.b).files.local == 1, "still, once no longer in motion")
    }

    @Test func placeholdersDownloadsEvictionAndExclusionKeepTheCountsExact() async throws {
        let pair = try SyncedPair()
        let docs = try pair.a.mkdir("docs")
        for index in 0..<4 {
            try pair.a.makeFile(
                "d\(index)", in: docs, contents: SeededGenerator.bytes(count: 1000, seed: UInt64(index)))
        }
        try pair.a.makeFile("top", contents: bytes("top"))
        try await eventually("all on B") { try pair.b.childNames(of: pair.b.lookupIno("docs")).count == 4 }
        try await pair.settle()
        var now = usage(pair.b)
        #expect(now.files.online == 5)
        #expect(now.localBytes == 0)

        _ = try contents(pair.b, "docs/d0")
        _ = try contents(pair.b, "top")
        // A download with every chunk shows `local` before its final sync makes the bytes count.
        try await eventually("two local") { pair.b.fs.residency.cacheUsage().localBytes == 1003 }
        now = usage(pair.b)
        #expect(now.files.online == 3)
        #expect(now.localBytes == 1003)

        _ = try pair.b.fs.residency.eviction.evict(below: try pair.b.lookupIno("top"))
        now = usage(pair.b)
        #expect(now.files.local == 1)
        #expect(now.localBytes == 1000)

        // An excluded folder's files are not counted; its kept bytes are, until freed.
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        now = usage(pair.b)
        #expect(now.files.online + now.files.local == 1)
        _ = try pair.b.fs.selectiveSync.include("docs")
        #expect(usage(pair.b).files.online == 5)

        // Remote removals and a remote move.
        try pair.a.fs.rename(
            parent: docs, name: FileName("d1"), newParent: .root, newName: FileName("d1-moved"), flags: [],
            caller: testCaller)
        try pair.a.fs.unlink(parent: docs, name: FileName("d2"), caller: testCaller)
        try await eventually("applied on B") { try pair.b.childNames().contains("d1-moved") }
        try await eventually("d2 gone on B") { try !pair.b.childNames(of: pair.b.lookupIno("docs")).contains("d2") }
        try await pair.settle()
        now = usage(pair.b)
        #expect(now.files.online == 4)
    }
}
