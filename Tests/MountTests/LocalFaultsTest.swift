import Foundation
import Glibc
import TestSupport
import Testing

/// Local faults on real mounts: a damaged cache file of a queued edit and a lost state
/// database. doc/SEMANTICS.md, "Lost local content" and "A lost state
/// database".
@Suite struct LocalFaultsTest {
    enum Damage: String, CaseIterable {
        case removed, truncated
        case truncatedAfterKill = "truncated after kill -9"
        case emptiedWhileUnmounted = "emptied while unmounted"

        /// Done while B's daemon is stopped (found at the next mount, with nothing in the
        /// kernel's page cache).
        var whileStopped: Bool { self != .truncated }
    }

    /// The cache files of a state directory holding exactly `content` (`cache/xx/<file ID>`;
    /// the mount keeps others, e.g. for its own files).
    static func cacheFiles(_ stateDir: String, holding content: [UInt8]) throws -> [String] {
        let cache = stateDir + "/cache"
        return try listDirectory(cache).filter { $0.count == 2 }.flatMap { shard in
            try listDirectory(cache + "/" + shard).map { cache + "/" + shard + "/" + $0 }
        }.filter { (try? readFile($0)) == content }.sorted()
    }

    /// B edits a file and fsyncs it, but its upload waits (10 min upload delay); its cache file is
    /// removed (B killed and mounted again), truncated while B runs, truncated while B is stopped
    /// by kill -9, or emptied while B is unmounted, and `sync` asked for. The edit must not
    /// replace the good version anywhere: `status` names the file with the reason,
    /// `user.syncfs.state` is `error`, reads fail with EIO, and A still reads the good version.
    /// (A short cache file found at mount is damage: a smaller size is always recorded before a
    /// cache file shrinks, doc/SEMANTICS.md "Lost local content".)
    @Test(arguments: Damage.allCases) func aQueuedEditWhoseCacheFileWasDamagedIsNeverUploaded(_ damage: Damage) throws {
        try SyncedMounts.with(uploadDelay: 20, uploadDelayB: 600_000) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let good = bytes(String(repeating: "the good version\n", count: 1_000))
            try writeFile(a.path("doc.txt"), good)
            try #require(a.expectSync())
            try #require(waitUntil(timeout: 30) { try readFile(b.path("doc.txt")) == good })
            let edit = bytes(String(repeating: "an edit whose bytes will be lost\n", count: 1_000))
            try withFile(b.path("doc.txt"), O_WRONLY | O_TRUNC) { fd in
                try writeAll(fd, edit)
                try posix("fsync") { fsync(fd) }
            }
            let files = try Self.cacheFiles(b.stateDir, holding: edit)
            try #require(files.count == 1, "\(files)")
            switch damage {
            case .removed:
                // Found at the next mount.
                try b.kill9()
                try posix("unlink") { unlink(files[0]) }
                try b.remount()
            case .truncated:
                // Found while mounted, when the upload is about to read it.
                try posix("truncate") { truncate(files[0], 100) }
            case .truncatedAfterKill:
                try b.kill9()
                try posix("truncate") { truncate(files[0], 100) }
                try b.remount()
            case .emptiedWhileUnmounted:
                try b.unmount()
                try posix("truncate") { truncate(files[0], 0) }
                try b.remount()
            }
            // `sync` makes the queue ready at once (before the fix it uploaded the remains);
            // the lost change never drains, so it reports no progress.
            let sync = try b.runSync(timeout: 5)
            #expect(sync.status == 75, "\(sync)")
            var failing: [MountSyncStatus.Failing] = []
            let named = waitUntil(timeout: 30) {
                failing = try b.syncStatus().failing
                return failing.contains { $0.path == "doc.txt" && $0.reason.contains("the local edit is lost") }
            }
            #expect(named, "status names the file: \(failing.map { ($0.path, $0.reason) })\n\(b.daemonLog())")
            #expect(try getXattr(b.path("doc.txt"), "user.syncfs.state") == bytes("error"))
            if damage.whileStopped {
                // (While mounted, the kernel may still serve the edit from its page cache.)
                let fd = try openFile(b.path("doc.txt"), O_RDONLY)
                var buffer = [UInt8](repeating: 0, count: 64)
                #expect(expectErrno(EIO, "read of the lost edit") { read(fd, &buffer, buffer.count) })
                close(fd)
            }
            #expect(expectErrno(EIO, "open for writing without O_TRUNC") { open(b.path("doc.txt"), O_WRONLY) })
            #expect(b.daemonLog().contains("the local edit is lost"), "logged")
            if damage != .removed {
                #expect(access(files[0], F_OK) == 0, "the remains stay in the cache (for `recover`)")
            }
            #expect(a.expectSync())
            #expect(try readFile(a.path("doc.txt")) == good, "the container's good version is kept")
            // The way out: overwrite it; what is written then is the program's and uploads.
            try writeFile(b.path("doc.txt"), "rewritten\n")
            #expect(b.expectSync())
            #expect(try b.syncStatus().failing.isEmpty)
            #expect(waitUntil(timeout: 30) { try readFile(a.path("doc.txt")) == bytes("rewritten\n") })
            #expect(try getXattr(b.path("doc.txt"), "user.syncfs.state") != bytes("error"))
        }
    }

    /// Changes queued while they cannot upload (10 min upload delay), the daemon killed, and
    /// `state.db` deleted or emptied: the next mount must not start fresh (which silently dropped
    /// the queue and deleted the cache files holding it). It exits 65 with a message saying how
    /// to recover, and the cache files stay.
    @Test(arguments: ["deleted", "emptied"]) func aLostStateDatabaseIsNotStartedFresh(_ loss: String) throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "600000"])
        defer { folder.tearDown() }
        try writeFile(folder.path("queued.txt"), "an edit not yet uploaded\n")
        try withFile(folder.path("queued.txt"), O_RDONLY) { fd in try posix("fsync") { fsync(fd) } }
        try folder.kill9()
        let database = folder.stateDir + "/state.db"
        for suffix in ["-wal", "-shm"] { unlink(database + suffix) }
        if loss == "deleted" {
            try posix("unlink") { unlink(database) }
        } else {
            try posix("truncate") { truncate(database, 0) }
        }
        let cached = try Self.cacheFiles(folder.stateDir, holding: bytes("an edit not yet uploaded\n"))
        #expect(cached.count == 1)
        var message = ""
        do {
            try folder.remount()
            Issue.record("the mount started fresh over a used state directory")
        } catch {
            message = "\(error)"
        }
        #expect(message.contains("state.db is missing or empty"), "\(message)")
        #expect(message.contains("syncfs-mount recover"), "says how to recover")
        #expect(message.contains("65"), "exit status 65 (EX_DATAERR): \(message)")
        #expect(
            try Self.cacheFiles(folder.stateDir, holding: bytes("an edit not yet uploaded\n")) == cached,
            "the cache file holding the edit is kept")
    }
}
