import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// Placeholders through the engine, without FUSE: attach without downloads, range-by-range
/// hydration shared by readers, O_TRUNC without download, eviction rules, the budget, and a
/// read during an outage. In the engine suite (serialized: engines are stopped one at a time).
extension SyncEngineTests {
    private func xattr(_ fixture: FileSystemFixture, _ name: String, _ key: String) throws -> String {
        let ino = try fixture.lookupIno(name)
        return String(decoding: try fixture.fs.xattrs.get(ino, name: "user.syncfs." + key), as: UTF8.self)
    }

    @Test func remoteFilesArriveAsPlaceholdersAndAReadDownloadsThem() async throws {
        let pair = try SyncedPair()
        let big = SeededGenerator.bytes(count: 6 << 20, seed: 7)
        _ = try pair.a.makeFile("big.bin", contents: big)
        _ = try pair.a.makeFile("small.txt", contents: Array("small".utf8))
        try await eventually("both names on B") { try pair.b.childNames() == ["big.bin", "small.txt"] }
        try await pair.settle()
        #expect(try pair.b.fs.getattr(try pair.b.lookupIno("big.bin")).size == Int64(big.count))
        #expect(pair.engineB.status().bytesDownloaded == 0, "names and attributes only")
        #expect(try xattr(pair.b, "big.bin", "state") == "online")
        #expect(try pair.b.fs.getattr(try pair.b.lookupIno("big.bin")).blocks == 1)

        // A read in the middle is served; the rest follows; the file becomes local.
        let ino = try pair.b.lookupIno("big.bin")
        let handle = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { pair.b.fs.fileIO.release(handle) }
        try pair.b.fs.residency.ensureContent(handle, offset: 3 << 20, count: 4096)
        #expect(readBytes(handle.descriptor, count: 4096, at: 3 << 20) == Array(big[(3 << 20)..<((3 << 20) + 4096)]))
        #expect(try contents(pair.b, "big.bin") == big)
        try await eventually("local") { try xattr(pair.b, "big.bin", "state") == "local" }
        #expect(try xattr(pair.b, "small.txt", "state") == "online", "only what was read is downloaded")
        #expect(throws: FSError.noAttribute) { try pair.b.fs.xattrs.get(ino, name: "user.syncfs.error") }
        #expect(try pair.b.fs.xattrs.list(ino).allSatisfy { !$0.hasPrefix("user.syncfs.") })
        #expect(throws: FSError.notPermitted) {
            try pair.b.fs.xattrs.set(ino, name: "user.syncfs.state", value: Array("local".utf8), mode: .any)
        }
    }

    @Test func concurrentReadersShareOneDownload() async throws {
        let pair = try SyncedPair()
        let data = SeededGenerator.bytes(count: 12 << 20, seed: 11)
        _ = try pair.a.makeFile("shared.bin", contents: data)
        try await eventually("on B") { try pair.b.childNames() == ["shared.bin"] }
        try await pair.settle()
        let results = Mutex<[[UInt8]]>([])
        nonisolated(unsafe) let reader = pair.b
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            if let bytes = try? contents(reader, "shared.bin") { results.withLock { $0.append(bytes) } }
        }
        #expect(results.withLock { $0.count } == 4)
        #expect(results.withLock { $0.allSatisfy { $0 == data } })
        let downloaded = pair.engineB.status().bytesDownloaded
        #expect(
            downloaded >= Int64(data.count) && downloaded < Int64(data.count) * 3 / 2, "one download: \(downloaded)")
    }

    @Test func truncatingOpenNeedsNoDownloadAndWritingOpenDownloadsFirst() async throws {
        let pair = try SyncedPair()
        _ = try pair.a.makeFile("replace.txt", contents: SeededGenerator.bytes(count: 1 << 20, seed: 3))
        _ = try pair.a.makeFile("append.txt", contents: Array("old".utf8))
        try await eventually("on B") { try pair.b.childNames() == ["append.txt", "replace.txt"] }
        try await pair.settle()
        let truncated = try pair.b.fs.open(
            try pair.b.lookupIno("replace.txt"), flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.b.write(truncated, Array("new".utf8), at: 0)
        pair.b.fs.fileIO.release(truncated)
        #expect(pair.engineB.status().bytesDownloaded == 0, "O_TRUNC downloads nothing")
        let appending = try pair.b.fs.open(try pair.b.lookupIno("append.txt"), flags: O_WRONLY, caller: testCaller)
        try pair.b.write(appending, Array("+more".utf8), at: 3)
        pair.b.fs.fileIO.release(appending)
        #expect(try contents(pair.b, "append.txt") == Array("old+more".utf8))
        try await eventually("A has both edits") {
            try contents(pair.a, "replace.txt") == Array("new".utf8)
                && contents(pair.a, "append.txt") == Array("old+more".utf8)
        }
    }

    @Test func evictionFreesCleanFilesOnlyAndTheBudgetEvictsLeastRecentlyUsed() async throws {
        let pair = try SyncedPair()
        for index in 0..<6 {
            _ = try pair.a.makeFile(
                "f\(index)", contents: SeededGenerator.bytes(count: 1 << 20, seed: UInt64(index + 1)))
        }
        try await eventually("on B") { try pair.b.childNames().count == 6 }
        try await pair.settle()
        for index in 0..<6 { _ = try contents(pair.b, "f\(index)") }
        try await eventually("all local") { pair.b.fs.residency.cacheUsage().localBytes == 6 << 20 }

        // A modified file is kept; a clean one goes and reads back right.
        let edited = try pair.b.fs.open(try pair.b.lookupIno("f0"), flags: O_WRONLY, caller: testCaller)
        try pair.b.write(edited, Array("changed".utf8), at: 0)
        let outcomes = Dictionary(
            uniqueKeysWithValues: try pair.b.fs.residency.eviction.evict(below: .root).map { ($0.path, $0.outcome) })
        #expect(outcomes["f0"] == .refused("has changes not yet uploaded"))
        #expect(outcomes["f1"] == .evicted(bytes: 1 << 20))
        pair.b.fs.fileIO.release(edited)
        #expect(try xattr(pair.b, "f1", "state") == "online")
        #expect(try contents(pair.b, "f1") == SeededGenerator.bytes(count: 1 << 20, seed: 2))

        // Budget of 4 MiB with 5 MiB local: the least recently used clean files go until under
        // 90% of it; pinned and recently used ones stay.
        try await pair.settle()
        try pair.b.fs.residency.setPinned(try pair.b.lookupIno("f5"), true)
        try await eventually("the pin downloads f5") { try xattr(pair.b, "f5", "state") == "local" }
        for name in ["f1", "f2", "f3"] { _ = try contents(pair.b, name) }
        // A download is marked local just after its last byte is served.
        try await eventually("5 MiB local") { pair.b.fs.residency.cacheUsage().localBytes == 5 << 20 }
        #expect(pair.b.fs.residency.eviction.enforceBudget(4 << 20) == 2)
        #expect(pair.b.fs.residency.cacheUsage().localBytes == 3 << 20)
        #expect(try xattr(pair.b, "f0", "state") == "online", "least recently used")
        #expect(try xattr(pair.b, "f1", "state") == "online")
        #expect(try xattr(pair.b, "f2", "state") == "local")
        #expect(try xattr(pair.b, "f3", "state") == "local", "the most recently used stays")
        #expect(try xattr(pair.b, "f5", "state") == "local", "pinned files are never evicted")
        #expect(try xattr(pair.b, "f5", "pinned") == "1")
        #expect(try contents(pair.b, "f0").prefix(7) == ArraySlice(Array("changed".utf8)), "f0's edit was uploaded")
    }

    @Test func readingAPlaceholderDuringAnOutageFailsQuicklyWithENETDOWN() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: faulty)
        _ = try pair.a.makeFile("far.bin", contents: SeededGenerator.bytes(count: 1 << 20, seed: 5))
        try await eventually("on B") { try pair.b.childNames() == ["far.bin"] }
        try await pair.settle()
        faulty.startOutage()
        let started = Date()
        #expect(throws: FSError.containerUnreachable) { _ = try contents(pair.b, "far.bin") }
        #expect(Date().timeIntervalSince(started) < 6, "fails within seconds")
        #expect(FSError.containerUnreachable.errno == ENETDOWN)
        // The outage is the mount's condition, not an error of the file (doc/SEMANTICS.md, "Failures,
        // outages and restarts"): the file stays a placeholder with no error.
        #expect(try xattr(pair.b, "far.bin", "state") == "online")
        #expect(!pair.engineB.status().online)
        faulty.endOutage()
        #expect(try contents(pair.b, "far.bin") == SeededGenerator.bytes(count: 1 << 20, seed: 5))
        #expect(try xattr(pair.b, "far.bin", "state") == "local")
    }

    @Test func aDownloadNobodyWaitsForStopsAtTheLastCloseAndResumesLater() async throws {
        let base = InMemoryContainer()
        let slow = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: slow)
        let data = SeededGenerator.bytes(count: 16 << 20, seed: 13)
        _ = try pair.a.makeFile("movie.bin", contents: data)
        try await eventually("on B") { try pair.b.childNames() == ["movie.bin"] }
        try await pair.settle()
        slow.delay(.chunk, by: .milliseconds(150))
        let ino = try pair.b.lookupIno("movie.bin")
        let handle = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        try pair.b.fs.residency.ensureContent(handle, offset: 0, count: 4096)
        #expect(readBytes(handle.descriptor, count: 4096, at: 0) == Array(data.prefix(4096)))
        pair.b.fs.fileIO.release(handle)
        try await eventually("the download stopped") { pair.b.fs.transfers.active.isEmpty }
        #expect(try xattr(pair.b, "movie.bin", "state") == "online")
        let partial = pair.engineB.status().bytesDownloaded
        #expect(partial < Int64(data.count) / 2, "stopped early: \(partial) bytes")

        // The next read finds the chunks already fetched on disk and downloads only the rest.
        slow.delay(.chunk, by: nil)
        #expect(try contents(pair.b, "movie.bin") == data)
        let total = pair.engineB.status().bytesDownloaded
        #expect(total < Int64(data.count) + partial, "chunks on disk were reused: \(total) bytes in all")
        try await eventually("local") { try xattr(pair.b, "movie.bin", "state") == "local" }
    }

    @Test func evictionRefusesAFileBeingWritten() async throws {
        let pair = try SyncedPair()
        _ = try pair.a.makeFile("doc.txt", contents: Array("synced".utf8))
        try await eventually("on B") { try pair.b.childNames() == ["doc.txt"] }
        try await pair.settle()
        _ = try contents(pair.b, "doc.txt")
        try await eventually("local") { pair.b.fs.residency.cacheUsage().localBytes == 6 }
        let ino = try pair.b.lookupIno("doc.txt")
        // A content change in progress (a write or truncate between its bracket) keeps the file.
        let node = try #require(pair.b.fs.live.transact { tree in tree.nodes[ino] })
        node.beginContentChange()
        let during = try pair.b.fs.residency.eviction.evict(below: ino).first?.outcome
        #expect(during == .refused("is being written"), "\(String(describing: during))")
        node.endContentChange()
        // So does an open handle.
        let handle = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        #expect(try pair.b.fs.residency.eviction.evict(below: ino).first?.outcome == .refused("is open"))
        pair.b.fs.fileIO.release(handle)
        #expect(try pair.b.fs.residency.eviction.evict(below: ino).first?.outcome == .evicted(bytes: 6))
    }
}
