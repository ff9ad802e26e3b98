import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// The content cache knows which file IDs have a cache file (`CacheFilePresence`), so a
/// placeholder without one gets its `st_blocks` without a `stat`. It must never say "absent"
/// while a file exists: after each operation of the cache, its answer is checked against the
/// disk.
@Suite("ContentCache: which file IDs have a cache file")
struct CacheFilePresenceTests {
    private func exists(_ cache: ContentCache, _ id: FileID) -> Bool {
        access(cache.path(for: id), F_OK) == 0
    }

    /// After operations of this cache only, the answer is exact: absent exactly when no file.
    private func expectExact(_ cache: ContentCache, _ ids: [FileID], _ step: String) {
        for id in ids {
            #expect(cache.isKnownAbsent(id) == !exists(cache, id), "\(step): \(id)")
        }
    }

    @Test func theAnswerFollowsEveryOperationOfTheCache() throws {
        let directory = try TemporaryDirectory()
        let earlier = FileID.random()
        try ContentCache(directory: directory.path).create(earlier)  // a cache file of an earlier run
        let cache = try ContentCache(directory: directory.path)
        let copy = cache  // copies share what they know
        let (a, b, c, d, e) = (FileID.random(), FileID.random(), FileID.random(), FileID.random(), FileID.random())
        let all = [earlier, a, b, c, d, e]

        #expect(!cache.isKnownAbsent(a), "nothing is known before the directory was listed")
        #expect(cache.allIDs() == [earlier])
        expectExact(cache, all, "listed")
        #expect(!copy.isKnownAbsent(earlier) && copy.isKnownAbsent(a), "a copy knows it too")

        try cache.create(a)
        close(try cache.createAndOpen(b))
        close(try copy.open(c))  // `open` creates a missing file
        expectExact(cache, all, "created")
        close(try cache.open(c))  // and opens an existing one
        expectExact(cache, all, "opened")

        let temporary = cache.temporaryPath()
        #expect(FileManager.default.createFile(atPath: temporary, contents: Data("downloaded".utf8)))
        try cache.install(temporary, as: d)
        expectExact(cache, all, "installed")
        #expect(cache.linkContent(of: d, as: e))
        expectExact(cache, all, "linked")

        #expect(cache.move(a, to: b))
        expectExact(cache, all, "moved onto an existing one")
        let fresh = FileID.random()
        #expect(cache.move(b, to: fresh))
        expectExact(cache, all + [fresh], "moved to a new ID")
        #expect(cache.move(a, to: b), "moving a missing file succeeds and creates nothing")
        #expect(!exists(cache, b))
        #expect(!cache.isKnownAbsent(b), "a move may have created its target: maybe, never a wrong absent")

        for id in all + [fresh] { cache.remove(id) }
        expectExact(cache, all + [fresh], "removed (b: a removal of a missing file makes it known absent)")
    }

    /// A file that vanished behind the cache's back stays "maybe" (a `stat` answers), and spare
    /// cache files made by the background thread are known.
    @Test func sparesAndFilesRemovedBehindItsBack() throws {
        let directory = try TemporaryDirectory()
        let cache = try ContentCache(directory: directory.path)
        _ = cache.allIDs()
        let spares = SpareCacheFiles(cache: cache, target: 4)
        var taken: (FileID, Int32)?
        _ = waitUntil(timeout: 10) {
            taken = spares.take()
            return taken != nil
        }
        let (spare, descriptor) = try #require(taken)
        close(descriptor)
        #expect(!cache.isKnownAbsent(spare) && exists(cache, spare))
        spares.close()
        #expect(cache.allIDs().count == 1, "only the spare taken is left")
        #expect(!cache.isKnownAbsent(spare))

        #expect(unlink(cache.path(for: spare)) == 0)
        #expect(!cache.isKnownAbsent(spare), "removed behind its back: maybe")
        cache.remove(spare)
        #expect(cache.isKnownAbsent(spare))
    }

    /// Removing a file ID known absent costs no system call (a first attach removes a possible
    /// left-over for each placeholder): what is known is trusted, so a file put behind the cache's
    /// back under such an ID (which the contract rules out) is not even looked for.
    @Test func removingAnIDKnownAbsentTouchesNothing() throws {
        let directory = try TemporaryDirectory()
        let cache = try ContentCache(directory: directory.path)
        let id = FileID.random()
        cache.remove(id)
        #expect(!cache.isKnownAbsent(id), "before the listing nothing is known, and nothing was there")
        _ = cache.allIDs()
        #expect(cache.isKnownAbsent(id))
        try cache.create(id)
        cache.remove(id)
        #expect(!exists(cache, id) && cache.isKnownAbsent(id), "a file it knows of is removed")
        let shard = (cache.path(for: id) as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: shard, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: cache.path(for: id), contents: Data("behind its back".utf8)))
        cache.remove(id)
        #expect(exists(cache, id), "known absent: no unlink was tried")
    }
}
