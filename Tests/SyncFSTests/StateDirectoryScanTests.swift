import Foundation
import Glibc
import SQLiteSupport
import TestSupport
import Testing

@testable import SyncFS

/// `StateDirectoryScan` (doc/CLI.md, "`syncfs-mount list [--json]`"): which state directories
/// count as waiting, how a live one is recognised without taking its lock, and resume commands
/// a shell reads back word for word.
@Suite("State directory scan")
struct StateDirectoryScanTests {
    /// A minimal state database: the facts and `queued` outbox rows.
    private func makeState(_ directory: String, container: String, mountpoint: String, queued: Int) throws {
        mkdir(directory, 0o700)
        let connection = try SQLiteConnection(path: directory + "/state.db")
        try connection.execute(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); CREATE TABLE outbox (file_id TEXT PRIMARY KEY);"
                + "INSERT INTO meta VALUES ('container', '\(container)'), ('mountpoint', '\(mountpoint)');")
        for index in 0..<queued { try connection.execute("INSERT INTO outbox VALUES ('\(index)')") }
    }

    @Test func aFlockHeldByAnyProcessIsSeenInProcLocks() throws {
        let temporary = try TemporaryDirectory("syncfs-scan")
        let root = temporary.path
        let fd = open(root + "/lock", O_RDWR | O_CREAT, 0o600)
        try #require(fd >= 0)
        var info = stat()
        #expect(fstat(fd, &info) == 0)
        let key = StateDirectoryScan.DeviceInode(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        #expect(!StateDirectoryScan.heldFlocks().contains(key))
        #expect(flock(fd, LOCK_EX) == 0)
        #expect(StateDirectoryScan.heldFlocks().contains(key), "device \(info.st_dev) inode \(info.st_ino)")
        close(fd)
        #expect(!StateDirectoryScan.heldFlocks().contains(key))
    }

    @Test func onlyIdleStateDirectoriesWithQueuedChangesAreWaiting() throws {
        let temporary = try TemporaryDirectory("syncfs-scan")
        let root = temporary.path
        try makeState(root + "/queued", container: "/data/box", mountpoint: "/home/me/Box", queued: 3)
        try makeState(root + "/clean", container: "/data/box", mountpoint: "/home/me/Clean", queued: 0)
        try makeState(root + "/live", container: "/data/box", mountpoint: "/home/me/Live", queued: 2)
        _ = FileManager.default.createFile(atPath: root + "/notes.txt", contents: Data("not a state directory".utf8))
        #expect(symlink(root + "/queued", root + "/link") == 0)
        let lock = open(root + "/live/lock", O_RDWR | O_CREAT, 0o600)
        #expect(flock(lock, LOCK_EX) == 0)
        let scan = StateDirectoryScan.scan(root: root)
        #expect(scan.waiting.map(\.stateDirectory) == [root + "/queued"], "\(scan.waiting)")
        #expect(scan.waiting.first?.queued == 3)
        #expect(scan.skipped == [root + "/link: a symlink; not followed"], "a file is ignored quietly")
        #expect(scan.waiting.first?.mountpoint == "/home/me/Box")
        close(lock)
        #expect(
            StateDirectoryScan.scan(root: root).waiting.map(\.stateDirectory) == [root + "/live", root + "/queued"])
        // Nothing was created beside the databases (read immutable).
        #expect(!FileManager.default.fileExists(atPath: root + "/queued/state.db-shm"))
        #expect(!FileManager.default.fileExists(atPath: root + "/queued/state.db-wal"))
    }

    @Test func aStateRootOthersCanWriteToIsNotRead() throws {
        let temporary = try TemporaryDirectory("syncfs-scan")
        let root = temporary.path
        try makeState(root + "/queued", container: "/data/box", mountpoint: "/home/me/Box", queued: 1)
        chmod(root, 0o777)
        let scan = StateDirectoryScan.scan(root: root)
        #expect(scan.waiting.isEmpty)
        #expect(scan.skipped.first?.contains("group or others can write to it (mode 0777)") == true, "\(scan.skipped)")
        chmod(root, 0o700)
        #expect(StateDirectoryScan.scan(root: root).waiting.count == 1)
    }

    @Test func theResumeCommandReadsBackWordForWordInAShell() throws {
        let container = "/data/it's a box"
        let mountpoint = "/home/me/My Folder;$(touch /tmp/pwned)"
        let state = "/home/me/.local/state/syncfs/x-1"
        let command = StateDirectoryScan.resumeCommand(
            container: container, mountpoint: mountpoint, stateDirectory: state)
        #expect(command.hasPrefix("syncfs-mount mount '/data/it'\\''s a box' "), "\(command)")
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "set -- " + command + "; printf '%s\\n' \"$@\""]
        let output = Pipe()
        shell.standardOutput = output
        try shell.run()
        let words = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(
            words == ["syncfs-mount", "mount", container, mountpoint, "--state-dir", state].joined(separator: "\n")
                + "\n")
        #expect(
            StateDirectoryScan.resumeCommand(
                container: "https://h:1/box", mountpoint: "/m", stateDirectory: "/s", tokenFile: "/t", caFile: "/ca")
                == "syncfs-mount mount https://h:1/box /m --state-dir /s --token-file /t --ca-file /ca")
        #expect(
            StateDirectoryScan.resumeCommand(container: "/c", mountpoint: nil, stateDirectory: "/s")
                == "syncfs-mount mount /c MOUNTPOINT --state-dir /s")
    }
}
