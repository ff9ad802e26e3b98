import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// A queued edit whose cache file vanished or was truncated must never be
/// uploaded (it once replaced the container's good version with an empty or short file, on every
/// mount). The file becomes `lost`: `user.syncfs.state` is `error`, `status` names it with the
/// reason, reads fail with EIO, and the container's version stays. In the serialized engine suite.
extension SyncEngineTests {
    enum Damage { case removed, truncated }

    /// B edits `doc.txt` while its container is unreachable; `damage` is done to B's cache file
    /// (while B runs, or between two runs of B: `atRestart`); then the container comes back.
    private func editThenDamage(_ damage: Damage, atRestart: Bool) async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: faulty)
        let good = bytes(String(repeating: "the good version\n", count: 100))
        try pair.a.makeFile("doc.txt", contents: good)
        try await eventually("doc.txt on B") { try contents(pair.b, "doc.txt") == good }
        faulty.startOutage()
        let ino = try pair.b.lookupIno("doc.txt")
        let handle = try pair.b.fs.open(ino, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.b.write(handle, bytes(String(repeating: "an edit that will be lost\n", count: 100)), at: 0)
        try pair.b.fs.fileIO.fsync(handle, dataOnly: false)
        pair.b.fs.fileIO.release(handle)
        #expect(pair.b.fs.outbox.isPending(try #require(pair.b.fileID(of: ino))), "the edit is queued")
        let cacheFile = try #require(pair.b.cacheFilePath(of: ino))
        let harm = {
            switch damage {
            case .removed: #expect(unlink(cacheFile) == 0)
            case .truncated: #expect(truncate(cacheFile, 10) == 0)
            }
        }
        if atRestart { try pair.restartB(afterShutDown: harm) } else { harm() }
        let commitsBefore = faulty.callCount(.commit)
        faulty.endOutage()
        pair.b.fs.outbox.expediteAll()
        try await eventually("status names the lost file") {
            pair.engineB.status().failing.contains { $0.reason.contains("the local edit is lost") }
        }
        try await Task.sleep(for: .milliseconds(300))  // scenario: time for a second report that must not come
        let failing = pair.engineB.status().failing
        #expect(failing.count == 1 && failing.first?.path == "doc.txt", "\(failing.map { ($0.path, $0.reason) })")
        #expect(try contents(pair.a, "doc.txt") == good, "the container's good version is kept")
        #expect(faulty.callCount(.commit) == commitsBefore, "nothing was committed")
        let lostIno = try pair.b.lookupIno("doc.txt")
        #expect(try pair.b.fs.xattrs.get(lostIno, name: "user.syncfs.state") == bytes("error"))
        #expect(throws: FSError.io(EIO), "a read of the lost edit fails") { try contents(pair.b, "doc.txt") }
        #expect(throws: FSError.io(EIO), "so does an open for writing without O_TRUNC") {
            try pair.b.fs.open(lostIno, flags: O_WRONLY, caller: testCaller)
        }
        // O_TRUNC is the way out: what is written afterwards is the program's, and uploads.
        let again = try pair.b.fs.open(lostIno, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.b.write(again, bytes("rewritten\n"), at: 0)
        pair.b.fs.fileIO.release(again)
        pair.b.fs.outbox.expediteAll()
        try await eventually("the rewrite reaches A") { try contents(pair.a, "doc.txt") == bytes("rewritten\n") }
    }

    @Test func aQueuedEditWhoseCacheFileVanishedIsNotUploaded() async throws {
        try await editThenDamage(.removed, atRestart: false)
    }

    @Test func aQueuedEditWhoseCacheFileWasTruncatedIsNotUploaded() async throws {
        try await editThenDamage(.truncated, atRestart: false)
    }

    @Test func aQueuedEditWhoseCacheFileVanishedBeforeTheMountIsNotUploaded() async throws {
        try await editThenDamage(.removed, atRestart: true)
    }
}
