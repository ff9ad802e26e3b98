import Foundation
import Glibc
import TestSupport
import Testing

/// `--read-only` (doc/CLI.md, "Read-only mounts"): the kernel mount is `ro`, so every change fails
/// with EROFS; the daemon refuses changes itself too (defence in depth: even with the kernel
/// mount switched to read-write by root, nothing is changed); changes from elsewhere still appear.
@Suite(.serialized)
struct ReadOnlyMountTest {
    @Test func writesFailWithEROFSAndRemoteChangesStillAppear() throws {
        let writer = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { writer.tearDown() }
        try writeFile(writer.path("before.txt"), "written before")
        try makeDirectory(writer.path("dir"))
        #expect(writer.expectSync())

        let reader = try TestFolder.make(
            .mount, sharedContainer: writer.containerPath, mountArguments: ["--read-only", "--upload-delay", "20"])
        defer { reader.tearDown() }
        #expect(waitUntil { try readText(reader.path("before.txt")) == "written before" }, "\(reader.daemonLog())")
        let options = TestFolder.mountOptions(reader.root)
        #expect(options.contains("ro"), "kernel options: \(options)")

        expectRefusals(reader)

        // Defence in depth: root switches the kernel mount to read-write (-i: no helper, the
        // mount(2) call itself); the daemon still refuses.
        let remount = try runProcess(["/usr/bin/mount", "-i", "-o", "remount,rw", reader.root], timeout: 30)
        if remount.status == 0 && !TestFolder.mountOptions(reader.root).contains("ro") {
            expectRefusals(reader)
        } else {
            Issue.record("could not remount the read-only mount read-write to test the daemon: \(remount.output)")
        }
        #expect(try readText(reader.path("before.txt")) == "written before")
        // Managing this machine's copies is not a change of the folder: evict and read again.
        try reader.expectCommand(["evict", reader.path("before.txt")])
        #expect(try readText(reader.path("before.txt")) == "written before")

        // A change made elsewhere appears.
        try writeFile(writer.path("after.txt"), "written after")
        try writeFile(writer.path("before.txt"), "changed")
        #expect(writer.expectSync())
        #expect(
            waitUntil(timeout: 20) {
                try readText(reader.path("after.txt")) == "written after"
                    && readText(reader.path("before.txt")) == "changed"
            }, "\(reader.daemonLog())")
        #expect(try reader.syncStatus().pendingEntries == 0)
    }

    private func expectRefusals(_ reader: TestFolder, sourceLocation: SourceLocation = #_sourceLocation) {
        let file = reader.path("before.txt")
        expectErrno(EROFS, "create", sourceLocation: sourceLocation) {
            open(reader.path("new.txt"), O_CREAT | O_WRONLY, 0o644)
        }
        expectErrno(EROFS, "open for writing", sourceLocation: sourceLocation) { open(file, O_WRONLY) }
        expectErrno(EROFS, "open with O_TRUNC", sourceLocation: sourceLocation) { open(file, O_RDONLY | O_TRUNC) }
        expectErrno(EROFS, "truncate", sourceLocation: sourceLocation) { truncate(file, 0) }
        expectErrno(EROFS, "chmod", sourceLocation: sourceLocation) { chmod(file, 0o600) }
        expectErrno(EROFS, "utimes", sourceLocation: sourceLocation) { utimes(file, nil) }
        expectErrno(EROFS, "mkdir", sourceLocation: sourceLocation) { mkdir(reader.path("newdir"), 0o755) }
        expectErrno(EROFS, "rename", sourceLocation: sourceLocation) { rename(file, reader.path("renamed.txt")) }
        expectErrno(EROFS, "unlink", sourceLocation: sourceLocation) { unlink(file) }
        expectErrno(EROFS, "rmdir", sourceLocation: sourceLocation) { rmdir(reader.path("dir")) }
        expectErrno(EROFS, "symlink", sourceLocation: sourceLocation) { symlink("before.txt", reader.path("link")) }
        expectErrno(EROFS, "setxattr", sourceLocation: sourceLocation) {
            Linux.setxattr(file, "user.note", Array("x".utf8), 0)
        }
        expectErrno(EROFS, "removexattr", sourceLocation: sourceLocation) { Linux.removexattr(file, "user.note") }
    }
}

extension TestFolder {
    /// The options /proc/mounts shows for `path`.
    static func mountOptions(_ path: String) -> [String] {
        let text = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 3, fields[1] == path { return fields[3].split(separator: ",").map(String.init) }
        }
        return []
    }
}
