import Foundation
import Glibc
import SyncBackend
import Testing

@testable import SyncFS

/// A deleted or emptied `state.db` next to a cache that holds content must not
/// start fresh (that dropped the queue silently, then deleted the cache files holding it).
@Suite struct LostStateDatabaseTests {
    enum Loss: CaseIterable { case deleted, emptied }

    @Test(arguments: Loss.allCases) func aLostDatabaseOverAUsedCacheRefusesToStartFresh(_ loss: Loss) throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("queued.txt", contents: bytes("an edit not yet uploaded"))
        let cacheFile = try #require(fixture.cacheFilePath(of: ino))
        #expect(!fixture.fs.outbox.items.isEmpty, "queued")
        try fixture.shutDown()
        switch loss {
        case .deleted:
            for suffix in ["", "-wal", "-shm"] { unlink(fixture.databasePath + suffix) }
        case .emptied:
            // An empty file in its place (a new inode: this process still holds the old one's
            // SQLite locks; the mount test truncates it in place).
            for suffix in ["", "-wal", "-shm"] { unlink(fixture.databasePath + suffix) }
            #expect(FileManager.default.createFile(atPath: fixture.databasePath, contents: Data()))
        }
        var refusal: UsedStateGuard.Refusal?
        do {
            _ = try FileSystemFixture.open(fixture.directory.path)
        } catch let error as UsedStateGuard.Refusal {
            refusal = error
        }
        let error = try #require(refusal, "a fresh start over a used cache is refused")
        #expect(error.description.contains("state.db is missing or empty"))
        #expect(error.description.contains("syncfs-mount recover"))
        #expect(
            FileManager.default.contents(atPath: cacheFile).map(Array.init) == bytes("an edit not yet uploaded"),
            "the cache file holding the edit is left as it was")
        // Refused again on the next try (nothing was recorded that would make it look mounted).
        #expect(throws: UsedStateGuard.Refusal.self) { _ = try FileSystemFixture.open(fixture.directory.path) }
    }

    /// A new state directory (empty cache) still starts, as does one whose database is intact.
    @Test func aNewStateDirectoryAndAnIntactOneStart() throws {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("kept.txt", contents: bytes("kept"))
        try fixture.reopen()
        #expect(try fixture.childNames() == ["kept.txt"])
    }
}
