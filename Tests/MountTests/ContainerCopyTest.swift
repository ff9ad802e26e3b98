import Foundation
import Glibc
import TestSupport
import Testing

/// `syncfs-mount container copy`: a container made through a mount on the embedded
/// server moves to PostgreSQL + RGW and back; a fresh mount of each copy shows the same tree,
/// byte for byte, and bad requests are refused before anything is written. Against the real
/// PostgreSQL and RGW of the test services.
@Suite(.serialized)
struct ContainerCopyTest {
    @Test func aContainerMovesToPostgresAndS3AndBackWithEveryFileIntact() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        backend.tokensInDatabase = true
        let embedded = try ServerProcess.start(root: backend.baseDir + "/embedded/root")
        defer { _ = embedded.stop() }
        let token = try embedded.createToken(container: "box")
        let a = try TestFolder.make(
            .mount, sharedContainer: embedded.url("box"),
            mountArguments: ["--upload-delay", "20", "--token-file", token])
        defer { a.tearDown() }

        // Files, folders, renames, deletes, a few MiB of content.
        try makeDirectory(a.path("docs"))
        try makeDirectory(a.path("docs/deep"))
        try writeFile(a.path("docs/note.txt"), "a note")
        try writeFile(a.path("docs/deep/large.bin"), try randomBytes(3 << 20))
        try writeFile(a.path("medium.bin"), try randomBytes(700_000))
        try writeFile(a.path("gone.txt"), "to be deleted")
        try writeFile(a.path("empty"), "")
        try posix("symlink") { symlink("docs/note.txt", a.path("link")) }
        #expect(a.expectSync(timeout: 60), "\(a.daemonLog())")
        try posix("rename") { rename(a.path("docs"), a.path("papers")) }
        try posix("rename") { rename(a.path("medium.bin"), a.path("papers/deep/medium.bin")) }
        try posix("unlink") { unlink(a.path("gone.txt")) }
        try writeFile(a.path("papers/note.txt"), "a note, edited")
        #expect(a.expectSync(timeout: 60), "\(a.daemonLog())")
        let original = SyncedTree.snapshot(a.root)
        #expect(
            Set(["papers/note.txt", "papers/deep/large.bin", "papers/deep/medium.bin", "empty", "link"])
                .isSubset(of: original.names) && !original.names.contains("gone.txt"), "\(original.names)")
        // The source must not change during a copy: its server stops (the mount stays, idle).
        _ = embedded.stop()

        let initialized = try backend.syncfs([
            "server-init", "--database", backend.databaseURL, "--chunk-store", backend.chunkStore,
        ])
        #expect(initialized.ok, "\(initialized)")
        let database = ["--database", backend.databaseURL, "--chunk-store", backend.chunkStore]
        let source = embedded.root + "/box"
        let copied = try backend.syncfs(["container", "copy", source, "db:box"] + database)
        #expect(copied.ok, "\(copied)")
        #expect(copied.stderr.contains("copied") && copied.stderr.contains("chunks"), "\(copied)")
        print("container copy to PostgreSQL + RGW: \(copied.stderr)")
        #expect(try backend.value("SELECT count(*) FROM syncfs_containers WHERE name = 'box'") == "1")
        #expect(
            try backend.value("SELECT container_id FROM syncfs_containers WHERE name = 'box'")
                == (try containerID(source)))

        // Served from the database, a fresh mount sees the same tree, byte for byte.
        let server = try backend.startServer()
        let databaseToken = baseFile(backend, "db-token", try backend.createToken(container: "box"))
        let b = try TestFolder.make(
            .mount, sharedContainer: server.url("box"), mountArguments: ["--token-file", databaseToken])
        defer { b.tearDown() }
        expectSameTree(
            original, b.root, "the copy in PostgreSQL + RGW", logs: { "\(b.daemonLog())\n\(backend.logs())" })

        // A second copy into the same name is refused, and leaves the first intact.
        let again = try backend.syncfs(["container", "copy", source, "db:box"] + database)
        #expect(again.status == 65 && again.stderr.contains("already"), "\(again)")

        // And back to a local directory: served by the embedded server, the same tree again.
        let backRoot = backend.baseDir + "/back/root"
        try FileManager.default.createDirectory(atPath: backRoot, withIntermediateDirectories: true)
        let back = try backend.syncfs(["container", "copy", "db:box", backRoot + "/box"] + database)
        #expect(back.ok, "\(back)")
        #expect(try containerID(backRoot + "/box") == (try containerID(source)))
        #expect(!FileManager.default.fileExists(atPath: backRoot + "/.box.syncfs-copy"))
        // Closed before it was renamed: its database was checkpointed, no WAL left behind.
        #expect(!FileManager.default.fileExists(atPath: backRoot + "/box/container.db-wal"))
        let local = try ServerProcess.start(root: backRoot)
        defer { _ = local.stop() }
        let localToken = try local.createToken(container: "box")
        let c = try TestFolder.make(
            .mount, sharedContainer: local.url("box"), mountArguments: ["--token-file", localToken])
        defer { c.tearDown() }
        expectSameTree(original, c.root, "the copy back", logs: { c.daemonLog() })
    }

    @Test func badRequestsAreRefusedBeforeAnythingIsWritten() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let initialized = try backend.syncfs([
            "server-init", "--database", backend.databaseURL, "--chunk-store", backend.chunkStore, "--create", "taken",
        ])
        #expect(initialized.ok, "\(initialized)")
        let source = backend.baseDir + "/root/box"
        try makeDirectory(backend.baseDir + "/root")
        let made = try backend.syncfs(["init", source])
        #expect(made.ok, "\(made)")
        let database = ["--database", backend.databaseURL, "--chunk-store", backend.chunkStore]
        let copy = { (arguments: [String]) throws -> ModelProcessResult in
            try backend.syncfs(["container", "copy"] + arguments)
        }

        // The same container on both sides.
        #expect(try copy([source, source]).status == 64)
        #expect(try copy([source, backend.baseDir + "/root/../root/box"]).status == 64)
        #expect(try copy(["db:box", "db:box"] + database).status == 64)
        // db:NAME without the database, the database without db:NAME.
        #expect(try copy([source, "db:box"]).status == 64)
        #expect(try copy([source, backend.baseDir + "/elsewhere"] + database).status == 64)
        // A destination that holds a container, or anything else.
        let taken = try copy([source, "db:taken"] + database)
        #expect(taken.status == 65 && taken.stderr.contains("taken"), "\(taken)")
        try makeDirectory(backend.baseDir + "/full")
        try writeFile(backend.baseDir + "/full/file", "someone's")
        let full = try copy([source, backend.baseDir + "/full"])
        #expect(full.status == 65, "\(full)")
        #expect(try readText(backend.baseDir + "/full/file") == "someone's")
        // A source that is not a container.
        #expect(try copy([backend.baseDir + "/full", backend.baseDir + "/new"]).status == 65)
        #expect(try copy(["db:nobody", backend.baseDir + "/new"] + database).status == 65)
        #expect(!pathExists(backend.baseDir + "/new"))
        // An unreachable destination: a chunk store nobody answers, a database that is not there.
        let deadStore = try copy(
            [
                source, "db:box", "--database", backend.databaseURL, "--chunk-store",
                "s3://bucket-name?endpoint=http://127.0.0.1:1&region=r",
            ])
        #expect(deadStore.status == 75, "\(deadStore)")
        let noDatabase = try copy(
            [source, "db:box", "--database", backend.databaseURL + "_none", "--chunk-store", backend.chunkStore])
        #expect(noDatabase.status == 65 && noDatabase.stderr.contains("does not exist"), "\(noDatabase)")
        #expect(try backend.value("SELECT count(*) FROM syncfs_containers") == "1")
    }

    /// A damaged chunk stops the copy before anything is published (the staged copy stays, no
    /// container of that name appears); once the chunk is whole again, the same command resumes:
    /// the chunks stored the first time are not sent again.
    @Test func aDamagedChunkStopsTheCopyAndTheSameCommandResumesIt() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let initialized = try backend.syncfs([
            "server-init", "--database", backend.databaseURL, "--chunk-store", backend.chunkStore,
        ])
        #expect(initialized.ok, "\(initialized)")
        // 39 files, then one more seeded last: its entry ends the feed, so its chunk is the last
        // one the copy asks for, after (at four at a time) at least 35 others were stored.
        let source = backend.baseDir + "/root/box"
        try makeDirectory(backend.baseDir + "/root")
        let early = backend.baseDir + "/early"
        let late = backend.baseDir + "/late"
        try makeDirectory(early)
        try makeDirectory(late)
        for index in 0..<39 { try writeFile(early + "/file-\(index).bin", try randomBytes(20_000 + index)) }
        try writeFile(late + "/last.bin", try randomBytes(30_000))
        let seeded = try backend.bench(["seed-container", early, source, "--level", "0", "--jobs", "1"])
        #expect(seeded.ok, "\(seeded)")
        let before = Set(try chunkFiles(source))
        let seededLast = try backend.bench(["seed-container", late, source, "--level", "0", "--jobs", "1"])
        #expect(seededLast.ok, "\(seededLast)")
        let newest = Array(Set(try chunkFiles(source)).subtracting(before))
        #expect(before.count == 39 && newest.count == 1, "\(before.count) then \(newest)")
        // Damage the last file's chunk: its last byte flipped.
        let chunkPath = try #require(newest.first)
        let whole = try readFile(chunkPath)
        var damaged = whole
        damaged[damaged.count - 1] ^= 0xff
        try writeFile(chunkPath, damaged)

        let database = ["--database", backend.databaseURL, "--chunk-store", backend.chunkStore]
        let first = try backend.syncfs(["container", "copy", source, "db:box"] + database)
        #expect(first.status == 65 && first.stderr.contains("damaged"), "\(first)")
        #expect(try backend.value("SELECT count(*) FROM syncfs_containers WHERE name = 'box'") == "0")
        #expect(try backend.value("SELECT count(*) FROM syncfs_containers WHERE name = '.syncfs-copy.box'") == "1")

        // Live rows only: a put the failure interrupted may have left its claim pending (schema 4).
        let kept = try backend.value("SELECT count(*) FROM syncfs_chunks WHERE state = 1")
        #expect((Int(kept) ?? 0) >= 35, "\(kept) chunks stored before the damaged one")

        try writeFile(chunkPath, whole)
        let second = try backend.syncfs(["container", "copy", source, "db:box"] + database)
        #expect(second.ok && second.stderr.contains("resuming"), "\(second)")
        #expect(second.stderr.contains("and \(40 - (Int(kept) ?? 0)) chunks"), "\(second)")
        #expect(second.stderr.contains(", \(kept) chunks already there"), "\(second)")
        #expect(try backend.value("SELECT count(*) FROM syncfs_containers") == "1")
        #expect(
            try backend.value("SELECT count(*) FROM syncfs_entries WHERE NOT deleted AND parent IS NOT NULL") == "40")
    }

    /// The chunk files of the local container at `path`.
    private func chunkFiles(_ path: String) throws -> [String] {
        let files = FileManager.default
        return try files.contentsOfDirectory(atPath: path + "/chunks").flatMap { shard in
            try files.contentsOfDirectory(atPath: path + "/chunks/" + shard).filter { !$0.hasPrefix(".") }
                .map { path + "/chunks/" + shard + "/" + $0 }
        }
    }

    private func containerID(_ path: String) throws -> String {
        let data = try #require(FileManager.default.contents(atPath: path + "/syncfs-container.json"))
        let marker = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return try #require(marker?["id"] as? String)
    }

    private func baseFile(_ backend: DatabaseBackendFixture, _ name: String, _ token: String) -> String {
        let path = backend.baseDir + "/" + name
        _ = FileManager.default.createFile(
            atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        return path
    }

    private func expectSameTree(
        _ original: SyncedTree, _ root: String, _ what: String, logs: () -> String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var last: [String] = []
        let same = waitUntil(timeout: 60) {
            last = original.differences(from: SyncedTree.snapshot(root), labels: ("original", "copy"))
            return last.isEmpty
        }
        #expect(same, "\(what): \(last.prefix(20).joined(separator: "\n"))\n\(logs())", sourceLocation: sourceLocation)
    }
}
