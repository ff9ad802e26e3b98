import Foundation
import Glibc
import TestSupport
import Testing

/// Syncing between two mounts of one container (doc/SEMANTICS.md, "Syncing"): every kind of change
/// travels both ways and the trees converge; identities (inode numbers) survive remote renames and
/// save-by-rename; a program that has a file open keeps its content; `sync` means "the container
/// has it"; the queue survives unmount, restart and kill -9 on either side; a temporary file costs
/// nothing; concurrent edits keep both versions.
///
/// Unlike the POSIX suites, these tests do not also run on a plain directory: two mounts of one
/// container are a SyncFS notion with no plain-directory counterpart.
///
/// Mounts use `--upload-delay 20` unless a test needs changes to stay queued. Waits are generous
/// (15–30 s) because the machine is shared and slow; a passing run takes far less.
///
/// Remote changes of the content or mtime of files the receiving mount's kernel has cached are
/// tested in `SyncTwoMountsTest+CachedFiles.swift`.
@Suite(.serialized)
struct SyncTwoMountsTest {
    // MARK: - The harness

    /// `SyncedMounts.with` unmounts both daemons and removes its directories even when the body throws.
    @Test func bothMountsAreTornDownWhenATestThrows() throws {
        var seen: (roots: [String], base: String, pids: [pid_t])?
        #expect(throws: TestFolderError.self) {
            try SyncedMounts.with { mounts in
                seen = (
                    [mounts.a.root, mounts.b.root], mounts.baseDir,
                    [mounts.a.daemonPID, mounts.b.daemonPID].compactMap { $0 }
                )
                #expect(TestFolder.isMounted(mounts.a.root) && TestFolder.isMounted(mounts.b.root))
                throw TestFolderError(message: "thrown by the test body")
            }
        }
        let (roots, base, pids) = try #require(seen)
        #expect(pids.count == 2)
        for root in roots { #expect(!TestFolder.isMounted(root), "\(root) is still mounted") }
        for pid in pids { #expect(kill(pid, 0) == -1, "daemon \(pid) still runs") }
        #expect(!pathExists(base), "the container directory \(base) was not removed")
    }

    // MARK: - 1. Every kind of change, both ways

    /// Here every file gets its content (and its mtime) before the other mount looks it up; content
    /// changes to a file the other mount has seen are `contentChangesReachAFileTheOtherMountHasSeen`.
    @Test func everyKindOfChangePropagatesBothWays() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            try exerciseChanges(Propagation(mounts, from: mounts.a, to: mounts.b, in: "fromA"), large: 20 << 20)
            try exerciseChanges(Propagation(mounts, from: mounts.b, to: mounts.a, in: "fromB"), large: 3 << 20)
            let tree = expectConverged(mounts, "after changes in both directions")
            let expected = ["fromA", "fromB"].flatMap { dir in
                [dir, "\(dir)/dangling", "\(dir)/large.bin", "\(dir)/link", "\(dir)/m1", "\(dir)/m1/n2"]
                    + ["\(dir)/m1/n2/moved.txt", "\(dir)/stamped.bin"]
            }
            #expect(tree?.names == ([""] + expected).sorted())
        }
    }

    /// Each kind of change made on the source, checked on the destination as soon as it arrives.
    private func exerciseChanges(_ p: Propagation, large largeFileSize: Int) throws {
        let (src, dst) = (p.src, p.dst)
        try p.step(
            "mkdir", change: { try makeDirectory(p.source.path(p.dir)) },
            arrived: { isDirectory(try lstatPath(p.destination.path(p.dir))) })
        try p.step(
            "create a file with content", change: { try writeFile(src("file.txt"), "hello") },
            arrived: { try readText(dst("file.txt")) == "hello" })
        try p.step(
            "nested directories",
            change: {
                for path in ["n1", "n1/n2", "n1/n2/n3"] { try makeDirectory(src(path)) }
                try writeFile(src("n1/n2/n3/leaf"), "leaf")
            }, arrived: { try readText(dst("n1/n2/n3/leaf")) == "leaf" })
        try p.step(
            "chmod of a file", change: { try posix("chmod") { chmod(src("file.txt"), 0o640) } },
            arrived: { permissions(try lstatPath(dst("file.txt"))) == 0o640 })
        try p.step(
            "chmod of a directory", change: { try posix("chmod") { chmod(src("n1"), 0o750) } },
            arrived: { permissions(try lstatPath(dst("n1"))) == 0o750 })
        // setuid/setgid are not taken from another machine, the sticky bit is (SEMANTICS.md,
        // "Ownership and permissions"); cleared on the source too, the trees converge again.
        try p.step(
            "setuid and sticky bits",
            change: {
                try posix("chmod") { chmod(src("file.txt"), 0o6711) }
                try posix("chmod") { chmod(src("n1/n2"), 0o1777) }
            },
            arrived: {
                try permissions(lstatPath(dst("file.txt"))) == 0o711 && permissions(lstatPath(dst("n1/n2"))) == 0o1777
            })
        try p.step(
            "setuid cleared on the source", change: { try posix("chmod") { chmod(src("file.txt"), 0o711) } },
            arrived: { permissions(try lstatPath(dst("file.txt"))) == 0o711 })
        // The times are set before the close: the file is uploaded once, content and mtime together.
        try p.step(
            "mtime with nanoseconds (futimens before the close)",
            change: {
                try withFile(src("stamped.bin"), O_WRONLY | O_CREAT | O_EXCL) { fd in
                    try writeAll(fd, patternBytes(count: 10_000, seed: 2))
                    try setMtime(fd: fd, seconds: 1_234_567_890, nanoseconds: 123_456_789)
                }
            }, arrived: { try mtimeOf(dst("stamped.bin")) == (1_234_567_890, 123_456_789) })
        try p.step(
            "mtime of a directory, set explicitly",
            change: { try setMtime(src("n1/n2/n3"), seconds: 1_111_111_111, nanoseconds: 222_222_222) },
            arrived: { try mtimeOf(dst("n1/n2/n3")) == (1_111_111_111, 222_222_222) })
        try p.step(
            "setxattr", change: { try setXattr(src("file.txt"), "user.color", bytes("blue")) },
            arrived: { try getXattr(dst("file.txt"), "user.color") == bytes("blue") })
        try p.step(
            "binary xattr on a directory", change: { try setXattr(src("n1"), "user.tag", [0, 1, 2, 255]) },
            arrived: { try getXattr(dst("n1"), "user.tag") == [0, 1, 2, 255] })
        try p.step(
            "xattr replaced", change: { try setXattr(src("file.txt"), "user.color", bytes("green")) },
            arrived: { try getXattr(dst("file.txt"), "user.color") == bytes("green") })
        try p.step(
            "removexattr", change: { try removeXattr(src("file.txt"), "user.color") },
            arrived: { try !listXattrs(dst("file.txt")).contains("user.color") })
        try p.step(
            "symlinks",
            change: {
                try makeSymlink(target: "file.txt", at: src("link"))
                try makeSymlink(target: "/nonexistent/target", at: src("dangling"))
            },
            arrived: { try readLink(dst("link")) == "file.txt" && readLink(dst("dangling")) == "/nonexistent/target" })
        try p.step(
            "rename within a directory",
            change: { try posix("rename") { rename(src("file.txt"), src("renamed.txt")) } },
            arrived: { try !pathExists(dst("file.txt")) && readText(dst("renamed.txt")) == "hello" })
        try p.step(
            "move across directories",
            change: { try posix("rename") { rename(src("renamed.txt"), src("n1/n2/moved.txt")) } },
            arrived: { try !pathExists(dst("renamed.txt")) && readText(dst("n1/n2/moved.txt")) == "hello" })
        try p.step(
            "rename of a directory with contents", change: { try posix("rename") { rename(src("n1"), src("m1")) } },
            arrived: {
                try !pathExists(dst("n1")) && readText(dst("m1/n2/n3/leaf")) == "leaf"
                    && readText(dst("m1/n2/moved.txt")) == "hello" && getXattr(dst("m1"), "user.tag") == [0, 1, 2, 255]
            })
        try p.step(
            "unlink", change: { try posix("unlink") { unlink(src("m1/n2/n3/leaf")) } },
            arrived: { !pathExists(dst("m1/n2/n3/leaf")) && pathExists(dst("m1/n2/n3")) })
        try p.step(
            "rmdir", change: { try posix("rmdir") { rmdir(src("m1/n2/n3")) } },
            arrived: { !pathExists(dst("m1/n2/n3")) && pathExists(dst("m1/n2/moved.txt")) })
        let large = try randomBytes(largeFileSize)
        try p.step(
            "a large file (\(largeFileSize >> 20) MiB)", change: { try writeFile(src("large.bin"), large) },
            arrived: {
                try lstatPath(dst("large.bin")).st_size == large.count && sameBytes(readFile(dst("large.bin")), large)
            })
    }

    // MARK: - 2. Remote renames keep the inode

    @Test func aRemoteRenameKeepsTheLocalInodeNumber() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("dir"))
            try makeDirectory(a.path("other"))
            try writeFile(a.path("dir/f"), "content of f")
            try writeFile(a.path("dir/inner"), "inner")
            try #require(
                waitUntil {
                    try readText(b.path("dir/f")) == "content of f" && readText(b.path("dir/inner")) == "inner"
                        && pathExists(b.path("other"))
                })
            let fileInode = try lstatPath(b.path("dir/f")).st_ino
            let dirInode = try lstatPath(b.path("dir")).st_ino

            try posix("rename") { rename(a.path("dir/f"), a.path("dir/g")) }
            try #require(waitUntil { !pathExists(b.path("dir/f")) && pathExists(b.path("dir/g")) })
            #expect(try lstatPath(b.path("dir/g")).st_ino == fileInode, "a rename within a directory")

            try posix("rename") { rename(a.path("dir/g"), a.path("other/h")) }
            try #require(waitUntil { !pathExists(b.path("dir/g")) && pathExists(b.path("other/h")) })
            #expect(try lstatPath(b.path("other/h")).st_ino == fileInode, "a move to another directory")
            #expect(try readText(b.path("other/h")) == "content of f")

            try posix("rename") { rename(a.path("dir"), a.path("renamed-dir")) }
            try #require(waitUntil { !pathExists(b.path("dir")) && pathExists(b.path("renamed-dir/inner")) })
            #expect(try lstatPath(b.path("renamed-dir")).st_ino == dirInode, "a directory rename")
            #expect(try readText(b.path("renamed-dir/inner")) == "inner")
            expectConverged(mounts, "after the renames")
        }
    }

    // MARK: - 3. Open readers keep the old content

    /// The inode number of a path on B changes when new content arrives only in this case: B had
    /// the file open, so the open descriptors keep the old inode (and its content) and the name
    /// leads to a new one. Without open readers the inode number stays (checked at the end).
    @Test func anOpenReaderKeepsTheOldContentAndAFreshOpenSeesTheNew() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let old = patternBytes(count: 300_000, seed: 3)
            let new = patternBytes(count: 200_000, seed: 4)
            try writeFile(a.path("doc"), old)
            try #require(waitUntil { sameBytes(try readFile(b.path("doc")), old) })
            let inodeBefore = try lstatPath(b.path("doc")).st_ino
            let reader = try openFile(b.path("doc"), O_RDONLY)
            var readerOpen = true
            defer { if readerOpen { close(reader) } }
            #expect(try preadBytes(reader, count: 4096, offset: 0) == Array(old[0..<4096]))

            try writeFile(a.path("doc"), new)
            let arrived = waitUntil { sameBytes(try readFile(b.path("doc")), new) }
            try #require(arrived, "the new content did not arrive on B\n\(mounts.logs())")
            try posix("lseek") { lseek(reader, 0, SEEK_SET) }
            let throughReader = try readAll(reader)
            #expect(sameBytes(throughReader, old), "the open reader reads the old content, all of it")
            #expect(try fstatFD(reader).st_ino == inodeBefore)
            #expect(try fstatFD(reader).st_size == old.count)
            let inodeAfter = try lstatPath(b.path("doc")).st_ino
            #expect(inodeAfter != inodeBefore, "the name leads to a new inode while the old one is open")
            try posix("close") { close(reader) }
            readerOpen = false

            // Nobody has it open on B now, but B's kernel knows the inode (it was just looked up):
            // the next version comes as a new inode too, with its own size and mtime — the
            // writeback cache never takes those from the daemon for a cached inode
            // (doc/SEMANTICS.md, "Inode numbers of remotely edited files").
            let third = patternBytes(count: 250_000, seed: 5)
            try writeFile(a.path("doc"), third)
            try #require(
                waitUntil { sameBytes(try readFile(b.path("doc")), third) },
                "the third version did not arrive on B\n\(mounts.logs())")
            #expect(try lstatPath(b.path("doc")).st_size == third.count)
            #expect(try lstatPath(b.path("doc")).st_ino != inodeAfter)
        }
    }

    // MARK: - 4. sync

    @Test func syncReturnsOnceTheContainerHasEverything() throws {
        // A 10-minute upload delay on A: nothing leaves A unless `sync` hurries it.
        try SyncedMounts.with(uploadDelay: 600_000, uploadDelayB: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let count = 40
            try makeDirectory(a.path("batch"))
            var files: [String: [UInt8]] = [:]
            for index in 0..<count {
                let data = patternBytes(count: 1000 + index * 97, seed: UInt64(100 + index))
                try writeFile(a.path("batch/file-\(index)"), data)
                files["batch/file-\(index)"] = data
            }
            let before = try a.syncStatus()
            #expect(before.pendingEntries >= count + 1, "the directory and every file are queued")
            usleep(300_000)  // scenario: time for an upload that must not happen
            #expect(!pathExists(b.path("batch")), "nothing is uploaded before the upload delay or a sync")

            let result = try a.runSync()
            #expect(result.status == 0, "\(result)")
            let after = try a.syncStatus()
            #expect(after.pendingEntries == 0)
            #expect(after.failing.isEmpty)
            #expect(after.bytesUploaded >= Int64(files.values.map(\.count).reduce(0, +)))

            // The container has everything: B, which follows it, shows every file shortly.
            let shown = waitUntil(timeout: 10) { try listDirectory(b.path("batch")).count == count }
            #expect(shown, "B shows \((try? listDirectory(b.path("batch")).count) ?? -1) of \(count) files")
            for (path, data) in files {
                #expect(sameBytes(try readFile(b.path(path)), data), "\(path) on B")
            }
            // Nothing queued: sync returns 0 at once.
            let idle = try b.runSync()
            #expect(idle.status == 0, "\(idle)")
        }
    }

    // MARK: - 5. Outages and restarts

    @Test func theQueueSurvivesUnmountAndRestart() throws {
        try SyncedMounts.with(uploadDelay: 600_000, uploadDelayB: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("keep.txt"), "version 1")
            try writeFile(a.path("gone.txt"), "to be deleted")
            try makeDirectory(a.path("dir"))
            try writeFile(a.path("dir/inner"), "inner")
            try #require(a.expectSync())
            try #require(expectConverged(mounts, "initial tree") != nil)

            // B is away while A changes things; A's sync puts them in the container.
            try b.unmount()
            try writeFile(a.path("keep.txt"), "version 2, written while B was unmounted")
            try posix("unlink") { unlink(a.path("gone.txt")) }
            try posix("rename") { rename(a.path("dir"), a.path("dir2")) }
            try writeFile(a.path("dir2/new.txt"), "new")
            try posix("chmod") { chmod(a.path("keep.txt"), 0o600) }
            try setXattr(a.path("dir2"), "user.k", bytes("v"))
            #expect(a.expectSync())
            try b.remount()
            expectConverged(mounts, "B remounted after changes made while it was unmounted")
            #expect(try readText(b.path("keep.txt")) == "version 2, written while B was unmounted")
            #expect(!pathExists(b.path("gone.txt")))

            // A's own queue survives its unmount (the lifeline unmounts without waiting for uploads,
            // like fusermount3 -u) and is uploaded after the next mount.
            try writeFile(a.path("later.txt"), "queued across a restart")
            try posix("rename") { rename(a.path("keep.txt"), a.path("dir2/kept.txt")) }
            try makeDirectory(a.path("made-later"))
            #expect(try a.syncStatus().pendingEntries >= 3)
            try a.unmount()
            usleep(200_000)  // scenario: time for an upload that must not happen
            #expect(!pathExists(b.path("later.txt")), "nothing was uploaded before the unmount")
            try a.remount()
            #expect(try a.syncStatus().pendingEntries >= 3, "the queue is rebuilt from the state database")
            #expect(a.expectSync())
            expectConverged(mounts, "A remounted with its queue, then synced")
            #expect(try readText(b.path("later.txt")) == "queued across a restart")
            #expect(try readText(b.path("dir2/kept.txt")) == "version 2, written while B was unmounted")
            #expect(isDirectory(try lstatPath(b.path("made-later"))))
        }
    }

    // MARK: - 6. kill -9 during uploads

    @Test func killDuringUploadsLosesNothing() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let a = mounts.a
            try makeDirectory(a.path("many"))
            var files: [String: [UInt8]] = [:]
            for index in 0..<200 {
                let data = patternBytes(count: 200 + (index * 37) % 3000, seed: UInt64(index + 1))
                try writeFsynced(a.path("many/small-\(index)"), data)
                files["many/small-\(index)"] = data
            }
            for index in 0..<3 {
                let data = try randomBytes(3 << 20)
                try writeFsynced(a.path("many/big-\(index).bin"), data)
                files["many/big-\(index).bin"] = data
            }
            let queued = try a.syncStatus().pendingEntries
            try a.kill9()
            #expect(queued > 0, "the kill should come while uploads are queued")
            print("kill -9 of A with \(queued) of \(files.count + 1) entries still queued")

            try a.remount()
            expectTree(SyncedTree.snapshot(a.root), files: files, directories: ["many"], "A after kill -9 and remount")
            #expect(a.expectSync(timeout: 60))
            #expect(try a.syncStatus().pendingEntries == 0)
            if let tree = expectConverged(mounts, timeout: 30, "after A's restart and sync") {
                expectTree(tree, files: files, directories: ["many"], "A and B")
            }
        }
    }

    // MARK: - 7. kill -9 while applying remote changes

    @Test func killWhileApplyingRemoteChangesLosesNothing() throws {
        // With the echo on for bursts, B's apply lasts long enough to be killed in the middle of
        // it (applied directly, 154 files were all there before the kill).
        try SyncedMounts.with(uploadDelay: 20, argumentsB: ["--inotify-echo-always"]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("incoming"))
            var files: [String: [UInt8]] = [:]
            for index in 0..<150 {
                let data = patternBytes(count: 500 + (index * 53) % 4000, seed: UInt64(1000 + index))
                try writeFile(a.path("incoming/small-\(index)"), data)
                files["incoming/small-\(index)"] = data
            }
            for index in 0..<4 {
                let data = try randomBytes(2 << 20)
                try writeFile(a.path("incoming/big-\(index).bin"), data)
                files["incoming/big-\(index).bin"] = data
            }
            var seenAtKill = 0
            let started = waitUntil {
                seenAtKill = try listDirectory(b.path("incoming")).count
                return seenAtKill >= 10
            }
            try #require(started, "B never started applying A's files\n\(mounts.logs())")
            try b.kill9()
            print("kill -9 of B with \(seenAtKill) of \(files.count) files applied")
            #expect(seenAtKill < files.count, "the kill should come while B is applying changes")

            #expect(a.expectSync(timeout: 60))
            try b.remount()
            if let tree = expectConverged(mounts, timeout: 30, "after B's restart") {
                expectTree(tree, files: files, directories: ["incoming"], "A and B")
            }
        }
    }

    // MARK: - 8. Temporary files cost nothing

    @Test func aFileDeletedBeforeItsUploadNeverReachesTheOtherMount() throws {
        try SyncedMounts.with(uploadDelay: 2000, uploadDelayB: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let name = "scratch-never-uploaded.tmp"
            var seenOnB = false
            func watch(milliseconds: Int) {
                for _ in 0..<(milliseconds / 20) {
                    if pathExists(b.path(name)) { seenOnB = true }
                    usleep(20_000)  // scenario: watching B for a name that must not appear
                }
            }
            let scratch = patternBytes(count: 1 << 20, seed: 8)
            let created = Date()
            try writeFile(a.path(name), scratch)
            watch(milliseconds: 200)
            try appendFile(a.path(name), bytes("more"))
            watch(milliseconds: 100)
            try posix("unlink") { unlink(a.path(name)) }
            let lifetime = Date().timeIntervalSince(created)
            try #require(lifetime < 1.5, "the scratch file lived \(lifetime) s, too close to the 2 s upload delay")

            try writeFile(a.path("marker.txt"), "marker")
            #expect(a.expectSync())
            let arrived = waitUntil {
                if pathExists(b.path(name)) { seenOnB = true }
                return try readText(b.path("marker.txt")) == "marker"
            }
            #expect(arrived, "the marker written after the scratch file did not arrive")
            watch(milliseconds: 300)
            #expect(!seenOnB, "the deleted scratch file appeared on B")
            #expect(try listDirectory(b.root).sorted() == ["marker.txt"])
            let status = try a.syncStatus()
            #expect(status.pendingEntries == 0)
            #expect(
                status.bytesUploaded < Int64(scratch.count),
                "A uploaded \(status.bytesUploaded) bytes: the 1 MiB scratch file must cost nothing")
        }
    }

    // MARK: - 9. Save-by-rename

    @Test func saveByRenameKeepsTheIdentityOnTheOtherMount() throws {
        // 500 ms on A: the temporary file is renamed long before it could be uploaded.
        try SyncedMounts.with(uploadDelay: 500, uploadDelayB: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("f.txt"), "version 1\n")
            try #require(waitUntil { try readText(b.path("f.txt")) == "version 1\n" })
            let inode = try lstatPath(b.path("f.txt")).st_ino
            let downloaded = try b.syncStatus().bytesDownloaded

            try saveByRename(a.path("f.txt"), "version 2, saved by writing .f.txt.swp and renaming it over f.txt\n")
            // B applies the feed in order: once the marker written after the save is there, so is the save.
            try writeFile(a.path("marker"), "after the save")
            #expect(a.expectSync())
            var sawTemporary = false
            let arrived = waitUntil {
                if pathExists(b.path(".f.txt.swp")) { sawTemporary = true }
                return pathExists(b.path("marker"))
            }
            try #require(arrived, "the marker did not arrive on B\n\(mounts.logs())")
            #expect(try b.syncStatus().bytesDownloaded > downloaded, "B downloaded the saved version")
            // Same identity (no delete + create reached B: no temporary file, one entry); B's kernel
            // had the inode cached, so the new version has a new inode number (doc/SEMANTICS.md).
            #expect(
                try readText(b.path("f.txt"))
                    == "version 2, saved by writing .f.txt.swp and renaming it over f.txt\n")
            _ = inode
            #expect(!sawTemporary, "the temporary file appeared on B")
            #expect(try listDirectory(b.root).sorted() == ["f.txt", "marker"])
        }
    }

    // MARK: - 10. Conflicts keep both versions

    /// B unmounts and mounts again before the full comparison; that B shows the winning version of
    /// the file without that is `theConflictLoserShowsTheWinningVersionWithoutARemount`.
    @Test func concurrentEditsKeepBothVersions() throws {
        // 10-minute delays: neither side uploads its edit until `sync`.
        try SyncedMounts.with(uploadDelay: 600_000) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let (fromA, fromB) = try editOnBothSides(mounts)
            let copyOnA = waitUntil { try listDirectory(a.root).count == 2 }
            let names = try listDirectory(a.root).sorted()
            #expect(copyOnA, "A never got B's conflicted copy: \(names)\n\(mounts.logs())")
            let copies = names.filter { $0.hasPrefix("notes (conflict from ") && $0.hasSuffix(").txt") }
            try #require(copies.count == 1 && names.count == 2, "names on A: \(names)")
            let copy = copies[0]
            // A's edit reached the container first: the file keeps it, B's edit becomes the copy.
            #expect(try readText(a.path("notes.txt")) == fromA)
            #expect(try readText(a.path(copy)) == fromB)
            #expect(try listDirectory(b.root).sorted() == names)
            #expect(try readText(b.path(copy)) == fromB)

            try b.unmount()
            try b.remount()
            expectConverged(mounts, "after both edits were synced (B mounted again)")
        }
    }

    // MARK: - Helpers

    /// Writes `text` to `.NAME.swp` beside `path`, fsyncs it and renames it over `path` (an editor's save).
    func saveByRename(_ path: String, _ text: String) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().path + "/." + url.lastPathComponent + ".swp"
        try withFile(temporary, O_WRONLY | O_CREAT | O_EXCL) { fd in
            try writeAll(fd, bytes(text))
            try posix("fsync") { fsync(fd) }
        }
        try posix("rename(\(temporary), \(path))") { rename(temporary, path) }
    }

    /// `notes.txt` synced to both mounts, then edited on A and on B while neither uploads (the
    /// mounts need a long upload delay), then `sync` on A, then on B. Returns both texts.
    func editOnBothSides(_ mounts: SyncedMounts) throws -> (fromA: String, fromB: String) {
        let (a, b) = (mounts.a, mounts.b)
        try writeFile(a.path("notes.txt"), "base\n")
        try #require(a.expectSync())
        try #require(waitUntil { try readText(b.path("notes.txt")) == "base\n" })
        let fromA = "edited on A\n"
        let fromB = "edited on B, at greater length\n"
        try writeFile(a.path("notes.txt"), fromA)
        try writeFile(b.path("notes.txt"), fromB)
        #expect(a.expectSync())
        #expect(b.expectSync())
        return (fromA, fromB)
    }

    /// Creates `path` with `data` and fsyncs it before closing.
    func writeFsynced(_ path: String, _ data: [UInt8]) throws {
        try withFile(path, O_WRONLY | O_CREAT | O_TRUNC) { fd in
            try writeAll(fd, data, what: "write(\(path))")
            try posix("fsync(\(path))") { fsync(fd) }
        }
    }

    /// `tree` holds exactly `directories` and `files` (with these bytes): nothing lost, duplicated
    /// or corrupted, and no conflicted copies.
    func expectTree(
        _ tree: SyncedTree, files: [String: [UInt8]], directories: [String], _ context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(tree.problems.isEmpty, "\(context): \(tree.problems.prefix(10))", sourceLocation: sourceLocation)
        let expected = Set([""] + directories + files.keys)
        let missing = expected.subtracting(tree.entries.keys).sorted()
        let extra = Set(tree.entries.keys).subtracting(expected).sorted()
        #expect(missing.isEmpty, "\(context): missing \(missing.prefix(20))", sourceLocation: sourceLocation)
        #expect(extra.isEmpty, "\(context): unexpected \(extra.prefix(20))", sourceLocation: sourceLocation)
        let corrupted = files.keys.sorted().filter { path in
            guard let content = tree.entries[path]?.content else { return false }
            return !sameBytes(content, files[path]!)
        }
        #expect(
            corrupted.isEmpty, "\(context): wrong content in \(corrupted.prefix(20))", sourceLocation: sourceLocation)
    }
}
