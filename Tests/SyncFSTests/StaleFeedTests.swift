import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// Deletes stay deleted. The follower applies a batch of the change feed some
/// time after reading it; meanwhile this mount's uploader may commit the deletion of entries in
/// that batch. An entry's older version read before its deletion must never bring it back: not
/// as a new local entry, and not — through a folder that is "not empty" when its own tombstone
/// arrives — as a re-upload of the folder (the reported chain of nested folders that came back
/// after `rm -rf` and never left the container again).
///
/// A's real follower is held back (its feed reads are delayed) while the test plays the
/// follower that read its batch before the deletes: `followerApplies` does what the follower
/// does for each entry of a batch, in order.
@Suite struct StaleFeedTests {
    @Test func aStaleVersionOfEntriesThisMountDeletedBringsNothingBack() async throws {
        let container = InMemoryContainer()
        let viewOfA = FaultInjectingContainer(container)
        let pair = try SyncedPair(container: container, viewOfA: viewOfA)
        let folder = try pair.a.mkdir("P")
        let file = try pair.a.makeFile("X", in: folder, contents: bytes("x\n"))
        try await pair.settle()
        let ids = [try #require(pair.a.fileID(of: folder)), try #require(pair.a.fileID(of: file))]
        viewOfA.delay(.changes, by: .seconds(4))
        let stale = try await container.changes(after: .beginning, limit: 256).entries
        #expect(stale.count >= 2)

        try pair.a.fs.unlink(parent: folder, name: FileName("X"))
        try pair.a.fs.rmdir(parent: .root, name: FileName("P"))
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        #expect(try pair.a.childNames() == [])

        // The batch read before the deletes is applied late.
        followerApplies(stale, on: pair.a)
        #expect(try pair.a.childNames() == [], "a stale version re-created a deleted entry")
        // Once the real follower reaches the tombstones, the bases kept for them are dropped.
        let uploads = UploadRecords(fileSystem: pair.a.fs)
        try await eventually("the tombstone bases are dropped") {
            ids.allSatisfy { uploads.syncBase(of: $0) == nil }
        }
        #expect(try pair.a.childNames() == [])
    }

    /// The persistent form: a file moved out of a folder, the folder deleted, then the file
    /// deleted. Stale versions re-create the folder *with* the file in it; the folder's tombstone
    /// then finds it not empty and re-uploads it — the container has the folder again for good.
    @Test func aStaleVersionNeverResurrectsAFolderInTheContainer() async throws {
        let container = InMemoryContainer()
        let viewOfA = FaultInjectingContainer(container)
        let pair = try SyncedPair(container: container, viewOfA: viewOfA)
        let folder = try pair.a.mkdir("P")
        _ = try pair.a.makeFile("X", in: folder, contents: bytes("x\n"))
        try await pair.settle()
        viewOfA.delay(.changes, by: .seconds(4))
        let stale = try await container.changes(after: .beginning, limit: 256).entries
        let folderID = try #require(pair.a.fileID(of: folder))

        try pair.a.fs.rename(parent: folder, name: FileName("X"), newParent: .root, newName: FileName("X2"), flags: [])
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        try pair.a.fs.rmdir(parent: .root, name: FileName("P"))
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        try pair.a.fs.unlink(parent: .root, name: FileName("X2"))
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()

        followerApplies(stale, on: pair.a)
        // The next batch: the current versions (tombstones), in feed (version) order.
        var current: [RemoteEntry] = []
        for entry in stale { if let now = try await container.entry(entry.id) { current.append(now) } }
        followerApplies(current.sorted { $0.version < $1.version }, on: pair.a)
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        #expect(try await pair.container.entry(folderID)?.isDeleted == true, "the folder came back in the container")
        #expect(try pair.a.childNames() == [])
        try await eventually("B is empty") { try pair.b.childNames() == [] }
    }
}

/// What the follower does with each entry of a batch, in order (without downloads: files arrive
/// as placeholders).
private func followerApplies(_ entries: [RemoteEntry], on fixture: FileSystemFixture) {
    let remote = fixture.fs.remoteChanges
    for entry in entries {
        remote.noteFeedReached(entry.version)
        _ = remote.applyRemote(entry, contentFile: nil)
    }
}
