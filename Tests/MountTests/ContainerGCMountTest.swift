import Foundation
import Glibc
import Testing

/// `syncfs-mount container stats`, `container retention` and `container gc` on the local
/// container of a live mount: the figures match what was written, overwritten and deleted; a
/// collection within retention frees nothing; after retention is cut to zero days the old
/// versions and the deleted file go; every current file still reads back byte for byte from a
/// fresh mount, and the mount goes on syncing.
@Suite(.serialized)
struct ContainerGCMountTest {
    /// What `container stats --json` prints (the fields this test reads).
    struct Stats: Decodable {
        struct Figures: Decodable {
            var liveEntries: Int
            var trashedEntries: Int
            var tombstones: Int
            var keptVersions: Int
            var chunks: Int
            var storedBytes: Int64
            var chunkPlainBytes: Int64
            var logicalBytes: Int64
        }
        var stats: Figures
    }

    /// What `container gc --json` prints.
    struct Collection: Decodable {
        struct Report: Decodable {
            var versionsPruned: Int
            var tombstonesPurged: Int
            var chunksExamined: Int
            var chunksDeleted: Int
            var bytesFreed: Int64
        }
        var dryRun: Bool
        var report: Report
    }

    private func syncfs(_ arguments: [String]) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, timeout: 120)
    }

    private func json<T: Decodable>(_ type: T.Type, _ arguments: [String]) throws -> T {
        let result = try syncfs(arguments + ["--json"])
        guard result.ok else { throw TestFolderError(message: "\(result)") }
        return try JSONDecoder().decode(T.self, from: Data(result.stdout.utf8))
    }

    @Test func statsAndCollectionOfAMountedContainerKeepEveryCurrentFile() throws {
        let a = try TestFolder.make(.mount)
        defer { a.tearDown() }
        let container = a.containerPath
        let kept = try randomBytes(300_000)
        let deleted = try randomBytes(200_000)
        try writeFile(a.path("kept.bin"), try randomBytes(250_000))
        try writeFile(a.path("deleted.bin"), deleted)
        #expect(a.expectSync(timeout: 60))
        try writeFile(a.path("kept.bin"), kept)  // the first content becomes an old version
        try posix("unlink") { unlink(a.path("deleted.bin")) }
        #expect(a.expectSync(timeout: 60))

        let before = try json(Stats.self, ["container", "stats", container]).stats
        #expect(before.liveEntries >= 1 && before.tombstones == 1 && before.trashedEntries == 1, "\(before)")
        #expect(before.keptVersions >= 2, "\(before)")  // kept.bin's first content, deleted.bin's last
        #expect(before.logicalBytes == 300_000, "\(before)")
        #expect(before.chunkPlainBytes >= 750_000 && before.storedBytes >= 750_000, "\(before)")
        let human = try syncfs(["container", "stats", container])
        #expect(human.ok && human.stdout.contains("KiB stored") && human.stdout.contains("1 in the trash"), "\(human)")

        // Within retention (30 days): nothing goes.
        let within = try json(Collection.self, ["container", "gc", container, "--grace", "0"]).report
        #expect(within.chunksDeleted == 0 && within.versionsPruned == 0 && within.tombstonesPurged == 0, "\(within)")

        // Zero days: a dry run counts, the collection frees the old content and the deleted file.
        let set = try syncfs(["container", "retention", container, "--days", "0"])
        #expect(set.ok && set.stdout.contains("retention 0 days"), "\(set)")
        let dry = try json(Collection.self, ["container", "gc", container, "--grace", "0", "--dry-run"])
        #expect(dry.dryRun && dry.report.chunksDeleted > 0, "\(dry)")
        #expect(try json(Stats.self, ["container", "stats", container]).stats.storedBytes == before.storedBytes)
        let collected = try json(Collection.self, ["container", "gc", container, "--grace", "0"]).report
        #expect(collected.chunksDeleted == dry.report.chunksDeleted && collected.bytesFreed == dry.report.bytesFreed)
        #expect(collected.tombstonesPurged == 1 && collected.versionsPruned >= 2, "\(collected)")
        #expect(collected.bytesFreed >= 450_000, "\(collected)")
        let after = try json(Stats.self, ["container", "stats", container]).stats
        #expect(after.keptVersions == 0 && after.trashedEntries == 0 && after.tombstones == 1, "\(after)")
        #expect(after.storedBytes == before.storedBytes - collected.bytesFreed, "\(after)")
        #expect(after.chunkPlainBytes >= 300_000 && after.logicalBytes == 300_000, "\(after)")

        // The mount goes on: a new file syncs, and a fresh mount reads everything current back.
        let added = try randomBytes(100_000)
        try writeFile(a.path("added.bin"), added)
        #expect(a.expectSync(timeout: 60))
        let b = try TestFolder.make(.mount, sharedContainer: container)
        defer { b.tearDown() }
        #expect(try readFile(b.path("kept.bin")) == kept)
        #expect(try readFile(b.path("added.bin")) == added)
        #expect(!pathExists(b.path("deleted.bin")))
        #expect(try readFile(a.path("kept.bin")) == kept)

        // Bad requests: not a container (65), a bad policy (64).
        let notContainer = try syncfs(["container", "gc", a.baseDir + "/state"])
        #expect(notContainer.status == 65, "\(notContainer)")
        let badPolicy = try syncfs(["container", "retention", container, "--days", "40000"])
        #expect(badPolicy.status == 64 && badPolicy.stderr.contains("retention days"), "\(badPolicy)")
    }
}
