import Foundation
import Glibc
import TestSupport
import Testing

/// The first mount of a state directory (doc/SEMANTICS.md, "The first mount attaches the tree"):
/// it says `ready` only once the container's tree is attached, so no
/// existing name is ever answered ENOENT and `O_CREAT|O_EXCL` of one fails; directories show the
/// container's mtime, mode and `user.` attributes, and attaching queues no upload; a container
/// unreachable during the attach fails the mount after `--attach-timeout` with exit status 75,
/// and the next mount attaches again.
@Suite(.serialized)
struct FirstAttachTest {
    /// 14,060 entries seeded through the `Container` API, a fresh mount: everything is there the
    /// moment `ready` is printed.
    @Test func aFirstMountIsReadyOnlyOnceItsTreeIsAttached() throws {
        let fixture = try AttachFixture.make(directories: 100, filesPerDirectory: 139, onTmpfs: true)
        defer { fixture.tearDown() }
        let started = Date()
        let b = try TestFolder.make(
            .mount, sharedContainer: fixture.container, mountArguments: ["--upload-delay", "20"])
        defer { b.tearDown() }
        let toReady = Date().timeIntervalSince(started)

        // The first thing a script does after `mount`: create a name the container already has.
        let last = try #require(fixture.entries.last)
        expectErrno(EEXIST, "open(\(last), O_CREAT|O_EXCL) right after ready") {
            open(b.path(last), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        }
        var info = stat()
        expectSuccess("stat(d099/f100) right after ready") { stat(b.path("d099/f100"), &info) }
        let found = try walkTree(b.root)
        #expect(
            found.count == fixture.entries.count,
            "entries right after ready: \(found.count) of \(fixture.entries.count)")
        #expect(found == fixture.entries, "missing: \(Set(fixture.entries).subtracting(found).sorted().prefix(10))")

        // Directories show the container's times and modes.
        var wrong: [String] = []
        for directory in fixture.directories {
            let expected = try DirectoryLook(fixture.source + "/" + directory)
            let shown = try DirectoryLook(b.path(directory))
            if shown != expected { wrong.append("\(directory): \(shown), container \(expected)") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) of \(fixture.directories.count) directories: \(wrong.prefix(5))")

        let status = try b.syncStatus()
        #expect(status.pendingEntries == 0, "attaching queued \(status.pendingEntries) uploads")
        #expect(status.bytesDownloaded == 0, "attaching downloaded \(status.bytesDownloaded) bytes")
        #expect(b.daemonLog(limit: 20_000).contains("attached"), "\(b.daemonLog())")
        print("first mount of \(fixture.entries.count) entries: ready after \(String(format: "%.2f", toReady)) s")
    }

    /// Directories made through mount A with distinct old mtimes, modes and `user.` attributes set
    /// explicitly: a fresh mount B shows exactly those, queues nothing, and remote creates, deletes
    /// and moves in them later leave their mtimes as the container has them.
    @Test func directoriesKeepTheContainersTimesModesAndAttributes() throws {
        let a = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { a.tearDown() }
        var directories: [String] = []
        for top in 0..<12 {
            for directory in ["t\(top)", "t\(top)/m", "t\(top)/m/n"] {
                try makeDirectory(a.path(directory))
                directories.append(directory)
                for file in 0..<4 { try writeFile(a.path(directory + "/f\(file)"), "file \(file) of \(directory)") }
            }
        }
        for (number, directory) in directories.enumerated().reversed() {
            let path = a.path(directory)
            if number % 4 == 0 { try setXattr(path, "user.note", bytes("directory \(number)")) }
            try posix("chmod(\(path))") { chmod(path, AttachFixture.expectedMode(number)) }
            var times = [AttachFixture.expectedTime(number), AttachFixture.expectedTime(number)]
            try posix("utimensat(\(path))") { utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) }
        }
        #expect(a.expectSync())
        let expected = try Dictionary(uniqueKeysWithValues: directories.map { ($0, try DirectoryLook(a.path($0))) })
        #expect(
            expected["t0"]?.mtimeSeconds == AttachFixture.expectedTime(0).tv_sec,
            "\(String(describing: expected["t0"]))")

        let b = try TestFolder.make(.mount, sharedContainer: a.containerPath, mountArguments: ["--upload-delay", "20"])
        defer { b.tearDown() }
        func differences() throws -> [String] {
            try directories.compactMap { directory in
                let shown = try DirectoryLook(b.path(directory))
                return shown == expected[directory]
                    ? nil : "\(directory): \(shown), A \(String(describing: expected[directory]))"
            }
        }
        let afterAttach = try differences()
        #expect(afterAttach.isEmpty, "\(afterAttach.count) of \(directories.count): \(afterAttach.prefix(5))")
        #expect(try b.syncStatus().pendingEntries == 0, "attaching queued uploads")

        // Later remote changes in those directories: a create, a delete and a move.
        let before = try lstatPath(b.path("t1"))
        try writeFile(a.path("t1/new.txt"), "new")
        try posix("unlink") { unlink(a.path("t2/f0")) }
        try posix("rename") { rename(a.path("t3/f1"), a.path("t4/m/moved")) }
        #expect(a.expectSync())
        let arrived = waitUntil(timeout: 15) {
            pathExists(b.path("t1/new.txt")) && !pathExists(b.path("t2/f0")) && pathExists(b.path("t4/m/moved"))
        }
        #expect(arrived, "the remote changes did not arrive\n\(b.daemonLog())")
        let afterChanges = try differences()
        #expect(afterChanges.isEmpty, "after remote changes: \(afterChanges.prefix(5))")
        let after = try lstatPath(b.path("t1"))
        #expect(
            (after.st_ctim.tv_sec, after.st_ctim.tv_nsec) != (before.st_ctim.tv_sec, before.st_ctim.tv_nsec),
            "a remote create moves the directory's ctime (local) so stat-based caches see the change")
        #expect(try b.syncStatus().pendingEntries == 0, "applying remote changes queued uploads")
    }

    /// The container answers the first look, then is unreachable: the first mount waits at most
    /// `--attach-timeout` seconds for it, fails with 75 and mounts nothing; once it is back, the
    /// next mount of the same state directory attaches the whole tree before `ready`.
    @Test func anUnreachableContainerFailsTheFirstMountAfterTheAttachTimeout() throws {
        let fixture = try AttachFixture.make(directories: 4, filesPerDirectory: 6, onTmpfs: false)
        defer { fixture.tearDown() }
        let mountpoint = fixture.baseDir + "/mnt"
        let state = fixture.baseDir + "/state"
        let outage = fixture.baseDir + "/outage"
        try makeDirectory(mountpoint)
        try writeFile(outage, "")
        let binary = try TestFolder.binaryPath()
        func unmount() {
            if TestFolder.isMounted(mountpoint) { _ = ModelProcess.run([binary, "unmount", mountpoint], timeout: 60) }
            if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) }
        }
        defer { unmount() }
        let mount = [binary, "mount", fixture.container, mountpoint, "--state-dir", state, "--upload-delay", "20"]

        let started = Date()
        let failed = ModelProcess.run(
            mount + ["--attach-timeout", "2"], env: OutageSwitch.environment(outage), timeout: 60)
        let waited = Date().timeIntervalSince(started)
        #expect(failed.status == 75, "\(failed)")
        #expect(failed.stderr.contains("could not attach"), "\(failed)")
        #expect(!TestFolder.isMounted(mountpoint), "nothing is mounted")
        #expect(waited < 30, "the mount gave up after \(waited) s")
        unmount()

        try posix("unlink") { unlink(outage) }
        let mounted = ModelProcess.run(mount, timeout: 120)
        try #require(mounted.ok, "\(mounted)")
        let found = try walkTree(mountpoint)
        #expect(found == fixture.entries, "missing: \(Set(fixture.entries).subtracting(found).sorted().prefix(10))")
    }
}
