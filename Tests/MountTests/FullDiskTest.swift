import Foundation
import Glibc
import TestSupport
import Testing

/// A full disk under the state directory, on real mounts: the state directory
/// is a small tmpfs (mounted in the test's private mount namespace, unmounted in teardown).
/// doc/SEMANTICS.md, "Full disk".
@Suite(.serialized) struct FullDiskTest {
    static let mebibyte = 1 << 20

    /// A mount whose state directory is a tmpfs of `megabytes` MiB; always torn down (daemon
    /// stopped, tmpfs unmounted, directories removed).
    static func withStateOnTmpfs(
        megabytes: Int, mountArguments: [String] = ["--upload-delay", "600000"], _ body: (TestFolder) throws -> Void
    ) throws {
        var tmpfs: String?
        let folder = try TestFolder.make(.mount, mountArguments: mountArguments) { folder in
            try mountTmpfs(folder.stateDir, megabytes: megabytes)
            tmpfs = folder.stateDir
        }
        defer {
            folder.tearDown()
            if let tmpfs {
                _ = runCommand(["/usr/bin/umount", "-l", tmpfs])
                try? FileManager.default.removeItem(atPath: folder.baseDir)
            }
        }
        try body(folder)
    }

    static func mountTmpfs(_ path: String, megabytes: Int, remount: Bool = false) throws {
        let options = (remount ? "remount," : "") + "size=\(megabytes)m,mode=0700"
        let result = runCommand(["/usr/bin/mount", "-t", "tmpfs", "-o", options, "tmpfs", path])
        guard result.status == 0 else {
            throw TestFolderError(message: "mount tmpfs on \(path) failed: \(result.output)")
        }
    }

    static func runCommand(_ command: [String]) -> (status: Int32, output: String) {
        (try? runProcess(command, timeout: 30)) ?? (-1, "could not run \(command)")
    }

    /// Bytes used on the filesystem holding `path`.
    static func usedBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return -1 }
        return Int(info.f_blocks - info.f_bfree) * Int(info.f_frsize)
    }

    /// 1 MiB of a pattern with no zero byte (zeros where the program wrote none show).
    static let pattern = (0..<mebibyte).map { UInt8(1 + $0 % 251) }

    /// `cp` of 100 MiB into a mount whose state directory has 64 MiB, its uploads held back: the
    /// program gets ENOSPC (at a write, `fsync` or `close`), the file shows `error` and `status`
    /// names it (disk full) and is not up to date; after the disk grows, nothing the program did
    /// not write reaches the container (the file is not uploaded at all); `rm` removes it and
    /// frees its cache file at once; the next mount does not bring it back.
    @Test func aWriteThatFindsTheDiskFullIsTheProgramsErrorAndIsNeverUploaded() throws {
        try Self.withStateOnTmpfs(megabytes: 64) { folder in
            let path = folder.path("big.bin")
            let fd = try openFile(path, O_WRONLY | O_CREAT | O_TRUNC)
            var failure: (call: String, code: Int32)?
            var accepted = 0
            for _ in 0..<100 where failure == nil {
                let written = Self.pattern.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
                if written < 0 {
                    failure = ("write", errno)
                } else {
                    accepted += written
                }
            }
            if failure == nil && fsync(fd) != 0 { failure = ("fsync", errno) }
            if close(fd) != 0 && failure == nil { failure = ("close", errno) }
            #expect(
                failure?.code == ENOSPC, "the program is told: \(String(describing: failure)), \(accepted) accepted")
            #expect(try getXattr(path, "user.syncfs.state") == bytes("error"))
            let status = try folder.syncStatus()
            let named = status.failing.first { $0.path == "big.bin" }
            #expect(
                named?.reason.contains("the disk holding the state directory is full") == true,
                "status names the file: \(status.failing.map { ($0.path, $0.reason) })\n\(folder.daemonLog())")
            #expect(status.upToDate == false, "status does not say all is in sync")
            #expect(folder.daemonLog().contains("big.bin"), "the log names the file")
            #expect(folder.daemonLog().contains("could not be saved"), "the log says it could not be saved")

            // Healing: the disk grows; `sync` makes the queue ready at once. The file must not be
            // uploaded (before the fix: its first 60 MB and then zeros).
            try Self.mountTmpfs(folder.stateDir, megabytes: 256, remount: true)
            let sync = try folder.runSync(timeout: 5)
            #expect(sync.status != 0, "sync cannot succeed while the file is unsaved: \(sync)")
            #expect(try folder.syncStatus().failing.contains { $0.path == "big.bin" })
            let other = try TestFolder.make(.mount, sharedContainer: folder.containerPath)
            defer { other.tearDown() }
            #expect(other.expectSync())
            #expect(
                access(other.path("big.bin"), F_OK) != 0,
                "the container never received the file the program could not write")

            // `rm` removes the entry and frees its cache file's space at once.
            let usedBefore = Self.usedBytes(folder.stateDir)
            try posix("unlink") { unlink(path) }
            let freed = waitUntil(timeout: 10) { Self.usedBytes(folder.stateDir) < usedBefore - 40 * Self.mebibyte }
            #expect(freed, "the cache file's space is freed: \(usedBefore) → \(Self.usedBytes(folder.stateDir)) used")
            #expect(folder.expectSync(), "nothing is left to sync")
            #expect(try folder.syncStatus().failing.isEmpty)
            try folder.unmount()
            try folder.remount()
            #expect(access(path, F_OK) != 0, "the removed file does not come back")
        }
    }

    /// A file whose write failed stays failed across a crash and a mount (the `write_failures`
    /// fact, committed when the write failed) and is never uploaded; written again with `O_TRUNC` once there is room, it uploads.
    @Test func aWriteFailedFileStaysFailedAcrossMountsUntilWrittenAgain() throws {
        try Self.withStateOnTmpfs(megabytes: 64) { folder in
            let path = folder.path("copy.bin")
            let fd = try openFile(path, O_WRONLY | O_CREAT | O_TRUNC)
            var failed = false
            for _ in 0..<100 where !failed {
                failed = Self.pattern.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } < 0
            }
            if fsync(fd) != 0 { failed = true }
            if close(fd) != 0 { failed = true }
            #expect(failed, "the program is told")
            // Killed: the mark was committed when the write failed, not only at unmount.
            try folder.kill9()
            try folder.remount()
            #expect(try getXattr(path, "user.syncfs.state") == bytes("error"), "still failed after a crash")
            #expect(try folder.syncStatus().failing.contains { $0.path == "copy.bin" })
            try Self.mountTmpfs(folder.stateDir, megabytes: 256, remount: true)
            #expect(try folder.runSync(timeout: 5).status != 0)
            try writeFile(path, "written again\n")
            #expect(folder.expectSync())
            #expect(try getXattr(path, "user.syncfs.state") == bytes("local"))
            #expect(try folder.syncStatus().failing.isEmpty)
            let other = try TestFolder.make(.mount, sharedContainer: folder.containerPath)
            defer { other.tearDown() }
            #expect(other.expectSync())
            #expect(try readFile(other.path("copy.bin")) == bytes("written again\n"))
        }
    }

    /// The disk filled to 100 % by a file outside the mount: the daemon stops cleanly and starts
    /// again on the full disk; unlink, rename and mkdir on the mount succeed and are committed
    /// (`fsync` of the directory), `status` says the disk is full, and after two more restarts
    /// the changes are still there.
    @Test func metadataChangesAndARestartSucceedOnAFullDisk() throws {
        try Self.withStateOnTmpfs(megabytes: 64) { folder in
            for name in ["a.txt", "b.txt"] { try writeFile(folder.path(name), "\(name)\n") }
            try withFile(folder.path("a.txt"), O_RDONLY) { fd in try posix("fsync") { fsync(fd) } }
            let filler = try openFile(folder.stateDir + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            for size in [Self.mebibyte, 4096, 1] {
                let chunk = [UInt8](repeating: 7, count: size)
                while chunk.withUnsafeBytes({ write(filler, $0.baseAddress!, size) }) == size {}
            }
            close(filler)
            var info = statvfs()
            statvfs(folder.stateDir, &info)
            #expect(info.f_bavail == 0, "the disk is full")
            // A daemon starts on the full disk (its reserve takes the database's first writes).
            try folder.unmount()
            try folder.remount()
            #expect(folder.daemonLog().contains("released its reserve"), "the reserve made room: \(folder.daemonLog())")

            try posix("unlink") { unlink(folder.path("a.txt")) }
            try posix("rename") { rename(folder.path("b.txt"), folder.path("c.txt")) }
            try posix("mkdir") { mkdir(folder.path("d"), 0o755) }
            // fsync of the directory commits the database durably (EIO before the fix).
            try withFile(folder.root, O_RDONLY | O_DIRECTORY) { fd in try posix("fsync(root)") { fsync(fd) } }
            #expect(try folder.syncStatus().stateDiskFull == true, "status says the disk is full")
            try folder.unmount()
            try folder.remount()
            #expect(try listDirectory(folder.root).sorted() == ["c.txt", "d"])
            #expect(try readFile(folder.path("c.txt")) == bytes("b.txt\n"))
            try folder.unmount()
            // A daemon starts on the full disk even without its reserve (released and never made
            // again while full).
            try folder.remount()
            #expect(try listDirectory(folder.root).sorted() == ["c.txt", "d"])
        }
    }
}
