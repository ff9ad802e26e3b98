import Foundation
import Glibc
import TestSupport
import Testing

/// A state directory whose `state.db` was lost is refused by the mount (exit
/// 65); `syncfs-mount recover` gets its cached content back so nothing is lost, and the mount
/// starts over. doc/CLI.md, "recover"; doc/SEMANTICS.md, "A lost state database".
@Suite struct RecoverTest {
    static func recover(_ stateDir: String, into destination: String) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath(), "recover", stateDir, "--into", destination], timeout: 60)
    }

    /// B queues an edit of a synced file and a new file while its uploads wait, is killed, and
    /// loses `state.db`. The mount refuses and names `recover`; `recover` moves the cached
    /// content into a new private folder (named by file ID, listed in RECOVERED.txt); B mounts
    /// again from the container; the recovered files copied into the folder sync to A.
    @Test func aLostDatabaseIsRecoveredAndNothingIsLost() throws {
        try SyncedMounts.with(uploadDelay: 20, uploadDelayB: 600_000) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let good = bytes(String(repeating: "the synced version\n", count: 500))
            try writeFile(a.path("doc.txt"), good)
            try #require(a.expectSync())
            try #require(waitUntil(timeout: 30) { try readFile(b.path("doc.txt")) == good })
            let edit = bytes(String(repeating: "an edit not yet uploaded\n", count: 500))
            let new = bytes("a new file not yet uploaded\n")
            try withFile(b.path("doc.txt"), O_WRONLY | O_TRUNC) { fd in
                try writeAll(fd, edit)
                try posix("fsync") { fsync(fd) }
            }
            try withFile(b.path("new.txt"), O_WRONLY | O_CREAT | O_EXCL) { fd in
                try writeAll(fd, new)
                try posix("fsync") { fsync(fd) }
            }
            try b.kill9()
            for suffix in ["", "-wal", "-shm"] { unlink(b.stateDir + "/state.db" + suffix) }
            var refusal = ""
            do {
                try b.remount()
                Issue.record("the mount started fresh over a lost database")
            } catch {
                refusal = "\(error)"
            }
            #expect(refusal.contains("syncfs-mount recover \(b.stateDir) --into"), "names the command: \(refusal)")

            // A state directory in use is refused (A's daemon holds its lock).
            let busy = try Self.recover(a.stateDir, into: mounts.baseDir)
            #expect(busy.status == 75, "\(busy) \(busy.stderr)")

            let rescue = mounts.baseDir + "/rescue"
            try makeDirectory(rescue)
            let result = try Self.recover(b.stateDir, into: rescue)
            #expect(result.ok, "\(result) \(result.stderr)")
            #expect(result.stdout.contains("Recovered"), "\(result.stdout)")
            let folders = try listDirectory(rescue)
            try #require(folders.count == 1 && folders[0].hasPrefix("SyncFS recovered "), "\(folders)")
            let folder = rescue + "/" + folders[0]
            var info = stat()
            #expect(lstat(folder, &info) == 0 && info.st_mode & 0o777 == 0o700, "private")
            let names = try listDirectory(folder).filter { $0 != "RECOVERED.txt" }
            let contents = try names.map { try readFile(folder + "/" + $0) }
            #expect(contents.contains(edit), "the queued edit is recovered")
            #expect(contents.contains(new), "the new file is recovered")
            let index = String(decoding: try readFile(folder + "/RECOVERED.txt"), as: UTF8.self)
            #expect(names.allSatisfy { index.contains($0) }, "\(index)")
            let again = try Self.recover(b.stateDir, into: rescue)
            #expect(again.ok && again.stdout.contains("Nothing to recover"), "\(again) \(again.stdout)")

            // The mount starts over from the container, and the recovered content syncs.
            try b.remount()
            #expect(waitUntil(timeout: 30) { try readFile(b.path("doc.txt")) == good }, "\(b.daemonLog())")
            try makeDirectory(b.path("recovered"))
            for (name, content) in zip(names, contents) { try writeFile(b.path("recovered/" + name), content) }
            #expect(b.expectSync())
            #expect(
                waitUntil(timeout: 30) {
                    let onA = try listDirectory(a.path("recovered")).map { try readFile(a.path("recovered/" + $0)) }
                    return onA.contains(edit) && onA.contains(new)
                }, "\(a.daemonLog())")
            #expect(try readFile(a.path("doc.txt")) == good)
        }
    }

    /// `--into DIR` where another user could rename what `recover` makes and plant a symlink
    /// under the printed name — DIR, or a folder above it, writable by others without the sticky
    /// bit — is refused (73) naming that folder, and nothing is moved. A world-writable sticky
    /// DIR (as /tmp) is fine: no one else can rename an entry of ours in it.
    @Test func aDestinationAnotherUserCouldRedirectIsRefused() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "600000"])
        defer { folder.tearDown() }
        let content = bytes("queued, never uploaded\n")
        try withFile(folder.path("queued.txt"), O_WRONLY | O_CREAT | O_EXCL) { fd in
            try writeAll(fd, content)
            try posix("fsync") { fsync(fd) }
        }
        try folder.kill9()
        for suffix in ["", "-wal", "-shm"] { unlink(folder.stateDir + "/state.db" + suffix) }
        func cacheFiles() throws -> [String] {
            let cache = folder.stateDir + "/cache"
            return try listDirectory(cache).flatMap { name -> [String] in
                var info = stat()
                guard lstat(cache + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return [name] }
                return try listDirectory(cache + "/" + name).map { name + "/" + $0 }
            }.sorted()
        }
        let cached = try cacheFiles()
        try #require(!cached.isEmpty)

        let open = folder.baseDir + "/open"
        try makeDirectory(open)
        try posix("chmod") { chmod(open, 0o777) }
        let below = open + "/mine"
        try makeDirectory(below, mode: 0o700)
        for destination in [open, below] {
            let result = try Self.recover(folder.stateDir, into: destination)
            #expect(result.status == 73, "\(destination): \(result)")
            #expect(
                result.stderr.contains("\(open) is writable by others") && result.stderr.contains("sticky"),
                "\(result.stderr)")
            #expect(try listDirectory(destination) == (destination == open ? ["mine"] : []), "nothing made")
        }
        #expect(try cacheFiles() == cached, "nothing moved or removed")

        let sticky = folder.baseDir + "/sticky"
        try makeDirectory(sticky)
        try posix("chmod") { chmod(sticky, 0o1777) }
        let result = try Self.recover(folder.stateDir, into: sticky)
        #expect(result.ok, "\(result)")
        let made = try listDirectory(sticky)
        try #require(made.count == 1, "\(made)")
        #expect(result.stdout.contains("into \(sticky)/\(made[0])"), "the printed path: \(result.stdout)")
        let recovered = try listDirectory(sticky + "/" + made[0]).filter { $0 != "RECOVERED.txt" }
        #expect(try recovered.map { try readFile(sticky + "/" + made[0] + "/" + $0) }.contains(content))
    }

    /// A state directory whose database is intact is refused (65): mount it instead.
    @Test func anIntactStateDirectoryIsNotRecovered() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        try writeFile(folder.path("kept.txt"), "kept\n")
        try folder.unmount()
        let result = try Self.recover(folder.stateDir, into: folder.baseDir)
        #expect(result.status == 65, "\(result) \(result.stderr)")
        #expect(result.stderr.contains("intact"), "\(result.stderr)")
        try folder.remount()
        #expect(try readFile(folder.path("kept.txt")) == bytes("kept\n"))
    }
}
