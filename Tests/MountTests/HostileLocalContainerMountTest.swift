import Foundation
import Glibc
import TestSupport
import Testing

/// The trust boundary for a local container: another writer of the container
/// directory (a synced folder, a shared disk) puts rows in `container.db` that no commit would
/// make — names `..`, `.` and `../x` aiming at a sentinel tree beside the mount point — and signals
/// them. The root mount with the inotify echo on (the default) refuses them, changes nothing
/// outside, applies the good rows written with them, lists the refusals in `status --json`, and
/// unmounts cleanly. (The HTTP variant with every class of bad entry: `HostileContainerMountTest`.)
@Suite(.serialized)
struct HostileLocalContainerMountTest {
    @Test func rowsWrittenStraightIntoContainerDBCannotReachOutsideTheMount() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let sentinel = folder.baseDir + "/sentinel"
        try makeDirectory(sentinel)
        try writeFile(sentinel + "/victim.txt", "the sentinel's own bytes\n", mode: 0o644)
        try posix("chmod") { chmod(sentinel + "/victim.txt", 0o644) }
        try writeFile(sentinel + "/doomed.txt", "must not be deleted\n", mode: 0o600)
        try makeSymlink(target: "victim.txt", at: sentinel + "/link")
        let before = TreeFingerprint.of(sentinel)
        let namesBefore = try Set(listDirectory(folder.baseDir))

        // (id, parent, name as hex, kind, mode, target as hex); versions follow the counter.
        let up = "5ec1" + String(repeating: "0", count: 27) + "1"
        let into = "5ec1" + String(repeating: "0", count: 27) + "2"
        let dot = "5ec1" + String(repeating: "0", count: 27) + "3"
        let slash = "5ec1" + String(repeating: "0", count: 27) + "4"
        let root = String(repeating: "0", count: 32)
        func id(_ n: Int) -> String { "5ec1" + String(repeating: "0", count: 26) + String(format: "%02x", n) }
        let rows: [(String, String, String, Int, Int, String?)] = [
            (up, root, hex(".."), 2, 0o755, nil),
            (into, up, hex("sentinel"), 2, 0o755, nil),
            (id(10), into, hex("victim.txt"), 1, 0o6777, nil),
            (id(11), into, hex("planted.txt"), 1, 0o6777, nil),
            (id(12), into, hex("planted-link"), 3, 0o777, hex("victim.txt")),
            (dot, root, hex("."), 2, 0o755, nil),
            (slash, root, hex("../sentinel/victim.txt"), 1, 0o6777, nil),
            (id(13), root, hex("good-dir"), 2, 0o755, nil),
            (id(14), id(13), hex("good-empty.txt"), 1, 0o640, nil),
        ]
        var sql = "BEGIN IMMEDIATE;\n"
        for (index, row) in rows.enumerated() {
            let target = row.5.map { "X'\($0)'" } ?? "NULL"
            sql += """
                INSERT INTO entries (id, version, deleted, device, parent, name, kind, mode, mtime, size, \
                symlink_target) VALUES ('\(row.0)', (SELECT value FROM counters WHERE name = 'version') + \(index + 1), \
                0, 'hostile', '\(row.1)', X'\(row.2)', \(row.3), \(row.4), 1732250000000000000, 0, \(target));

                """
        }
        sql += "UPDATE counters SET value = value + \(rows.count) WHERE name = 'version';\nCOMMIT;\n"
        let edit = ModelProcess.run(["/usr/bin/sqlite3", folder.containerPath + "/container.db", sql], timeout: 60)
        #expect(edit.ok, "\(edit)")
        try appendFile(folder.containerPath + "/changes.signal", [1])

        #expect(
            waitUntil(timeout: 60) { pathExists(folder.path("good-dir/good-empty.txt")) },
            "the good rows arrive; daemon log:\n\(folder.daemonLog())")
        let after = TreeFingerprint.of(sentinel)
        #expect(after == before, "the sentinel changed: \(TreeFingerprint.difference(before, after))")
        #expect(try Set(listDirectory(folder.baseDir)) == namesBefore, "nothing created or deleted beside the mount")
        #expect(try permissions(lstatPath(folder.path("good-dir/good-empty.txt"))) == 0o640)

        let status: RefusalStatus = try folder.statusJSON(of: folder.root)
        let refused = Set((status.refusedRemoteEntries ?? []).map(\.fileID))
        for (entry, what) in [(up, "a directory named .."), (dot, "a directory named ."), (slash, "a name with /")] {
            #expect(refused.contains(entry), "\(what) (\(entry)) is listed as refused")
        }
        #expect(try listDirectory(folder.root).sorted() == ["good-dir"])
        try folder.unmount()
        #expect(!TestFolder.isMounted(folder.root))
    }

    private func hex(_ text: String) -> String {
        Array(text.utf8).map { String(format: "%02X", $0) }.joined()
    }
}
