import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// `syncfs-mount recover` gets the cached content of a state directory whose
/// database was lost back into a new private folder, and the state directory mounts again.
@Suite struct LostStateRecoveryTests {
    static let moment = Date(timeIntervalSince1970: 1_795_000_000)
    static let folderName = "SyncFS recovered 2026-11-18 110640"

    /// A state directory with a queued file and a lost database.
    private func lostState() throws -> FileSystemFixture {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("queued.txt", contents: bytes("an edit not yet uploaded"))
        try fixture.shutDown()
        for suffix in ["", "-wal", "-shm"] { unlink(fixture.databasePath + suffix) }
        return fixture
    }

    @Test func theCachedContentIsMovedIntoAPrivateFolderAndTheStateMountsAgain() throws {
        let fixture = try lostState()
        let id = try #require(
            FileManager.default.subpathsOfDirectory(atPath: fixture.cachePath).first { $0.count == 35 }
        )
        .suffix(32)
        // The daemon's log named the file when its upload failed: a hint for RECOVERED.txt.
        let log =
            "2026-11-18T11:00:00+0000 notice syncfs: [SyncFS] upload of docs/queued.txt (\(id)) failed (attempt 1): refused\n"
        #expect(
            FileManager.default.createFile(atPath: fixture.directory.path + "/syncfs.log", contents: Data(log.utf8)))
        let destination = try TemporaryDirectory()
        let oldMask = umask(0)
        defer { umask(oldMask) }
        let outcome = try LostStateRecovery.recover(
            stateDirectory: fixture.directory.path, into: destination.path, now: Self.moment)
        let folder = try #require(outcome.folder)
        #expect(folder == destination.path + "/" + Self.folderName)
        let file = try #require(outcome.files.first)
        #expect(outcome.files.count == 1)
        #expect(
            FileManager.default.contents(atPath: folder + "/" + file.name).map(Array.init)
                == bytes("an edit not yet uploaded"))
        var info = stat()
        #expect(lstat(folder, &info) == 0 && info.st_mode & 0o7777 == 0o700, "the folder is private whatever the umask")
        #expect(lstat(folder + "/" + file.name, &info) == 0 && info.st_mode & 0o7777 == 0o600)
        let index = try String(contentsOfFile: folder + "/RECOVERED.txt", encoding: .utf8)
        #expect(index.contains("\(file.name)\t24\tdocs/queued.txt\n"), "\(index)")
        #expect(file.name == String(id))
        // The cache is empty: the state directory starts over.
        _ = try FileSystemFixture.open(fixture.directory.path)
    }

    /// Another user planted a symlink where the folder would go: it is not followed; the folder
    /// gets the next name and nothing lands where the link points.
    @Test func aPlantedSymlinkIsNotFollowed() throws {
        let fixture = try lostState()
        let destination = try TemporaryDirectory()
        let elsewhere = try TemporaryDirectory()
        #expect(symlink(elsewhere.path, destination.path + "/" + Self.folderName) == 0)
        let outcome = try LostStateRecovery.recover(
            stateDirectory: fixture.directory.path, into: destination.path, now: Self.moment)
        #expect(outcome.folder == destination.path + "/" + Self.folderName + " (2)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
    }

    @Test func anIntactDatabaseIsRefused() throws {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("kept.txt", contents: bytes("kept"))
        fixture.fs.store.factSet(.mountCount, 1)
        try fixture.shutDown()
        let destination = try TemporaryDirectory()
        #expect(throws: MountError.self) {
            try LostStateRecovery.recover(stateDirectory: fixture.directory.path, into: destination.path)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path).isEmpty)
        let kept = try FileManager.default.subpathsOfDirectory(atPath: fixture.cachePath).filter { $0.count == 35 }
        #expect(
            kept.contains { FileManager.default.contents(atPath: fixture.cachePath + "/" + $0) == Data("kept".utf8) })
    }
}
