import Foundation
import Glibc
import TestSupport
import Testing

/// `resolve --keep` reads and writes only the entries the conflict lists: another writer of the
/// container plants a "conflict copy" that is a symlink to a private file outside the mount,
/// marked as kept by this very device, so `--keep local` would take its content. The resolve is
/// refused, the original keeps its content and the private file's bytes reach nothing.
@Suite(.serialized)
struct ResolveHostileCopyTest {
    @Test func aPlantedSymlinkCopyIsNeverReadIntoTheOriginal() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--device-name", "victim"])
        defer { folder.tearDown() }
        try writeFile(folder.path("plan.txt"), "my plan\n")
        try folder.expectCommand(["sync", folder.root])
        let planID = try syncfsXattr(folder.path("plan.txt"), "id")
        let secret = folder.baseDir + "/secret"
        try writeFile(secret, "PRIVATE KEY\n", mode: 0o600)

        let note = "{\"of\":\"\(planID)\",\"host\":\"victim\",\"time\":\"2026-11-29T00:00:00Z\",\"reason\":\"planted\"}"
        let copyName = "plan (conflict from victim).txt"
        let copyID = "5ec2" + String(repeating: "0", count: 27) + "1"
        let sql = """
            BEGIN IMMEDIATE;
            INSERT INTO entries (id, version, deleted, device, parent, name, kind, mode, mtime, size, \
            symlink_target, xattrs) VALUES ('\(copyID)', (SELECT value FROM counters WHERE name = 'version') + 1, \
            0, 'hostile', '\(String(repeating: "0", count: 32))', X'\(hex(Array(copyName.utf8)))', 3, 511, \
            1732250000000000000, 0, X'\(hex(Array(secret.utf8)))', X'\(hex(xattrBlob("user.syncfs.conflict", note)))');
            UPDATE counters SET value = value + 1 WHERE name = 'version';
            COMMIT;
            """
        let edit = ModelProcess.run(["/usr/bin/sqlite3", folder.containerPath + "/container.db", sql], timeout: 60)
        #expect(edit.ok, "\(edit)")
        try appendFile(folder.containerPath + "/changes.signal", [1])
        #expect(
            waitUntil(timeout: 60) {
                try folder.expectCommand(["conflicts", folder.root, "--json"]).stdout.contains("plan (conflict")
            }, "the planted copy is listed as a conflict\n\(folder.daemonLog())")

        let result = try folder.expectCommand(["resolve", folder.path("plan.txt"), "--keep", "local"], status: 1)
        #expect(result.stderr.contains("symlink"), "\(result.stderr)")
        #expect(try readText(folder.path("plan.txt")) == "my plan\n", "the original keeps its content")
        #expect(try readText(secret) == "PRIVATE KEY\n")
        #expect(try lstatPath(folder.path(copyName)).st_mode & S_IFMT == S_IFLNK, "the copy was not deleted")
    }

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined() }

    /// One attribute in `container.db`'s xattrs encoding (name length u32 LE, name, value length
    /// u32 LE, value).
    private func xattrBlob(_ name: String, _ value: String) -> [UInt8] {
        func length(_ count: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: count >> (8 * $0)) } }
        return length(name.utf8.count) + Array(name.utf8) + length(value.utf8.count) + Array(value.utf8)
    }
}
