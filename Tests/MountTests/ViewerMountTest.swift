import Foundation
import Glibc
import TestSupport
import Testing

/// A viewer's mount (doc/SEMANTICS.md, "A viewer's mount"): mounted with a token that has a
/// viewer's rights only, without `--read-only`, every change fails with EROFS, the same changes
/// succeed on an editor's mount of the same container, the editor's commits appear, and
/// `status` says why. A token made a viewer's while changes are queued keeps them queued until
/// it is an editor's again.
///
/// No plain-directory counterpart: a role is a SyncFS notion (a plain read-only directory says
/// nothing about it), so the refusals are checked on the mount against an editor's mount.
@Suite(.serialized)
struct ViewerMountTest {
    @Test func aViewersMountRefusesChangesAndFollowsTheEditors() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        let server = try ServerProcess.start(root: base + "/server")
        defer {
            server.tearDown()
            try? FileManager.default.removeItem(atPath: base)
        }
        let editorToken = try server.createToken(container: "box", label: "editor")
        let viewerToken = try server.createToken(container: "box", label: "viewer")
        try server.makeViewer(label: "viewer", user: "vera", container: "box")

        let editor = try TestFolder.make(
            .mount, sharedContainer: server.url("box"),
            mountArguments: ["--upload-delay", "20", "--token-file", editorToken])
        defer { editor.tearDown() }
        try writeFile(editor.path("before.txt"), "written before")
        try makeDirectory(editor.path("dir"))
        try setXattr(editor.path("before.txt"), "user.note", Array("kept".utf8))
        #expect(editor.expectSync())

        let viewer = try TestFolder.make(
            .mount, sharedContainer: server.url("box"),
            mountArguments: ["--upload-delay", "20", "--token-file", viewerToken])
        defer { viewer.tearDown() }
        #expect(waitUntil { try readText(viewer.path("before.txt")) == "written before" }, "\(viewer.daemonLog())")
        #expect(!TestFolder.mountOptions(viewer.root).contains("ro"), "the kernel mount is not read-only")

        expectChanges(refused: true, in: viewer)
        // What reads keeps working: listings, attributes, xattr reads, a lock for reading.
        #expect(try listDirectory(viewer.root).sorted() == ["before.txt", "dir"])
        #expect(try statPath(viewer.path("before.txt")).st_size == 14)
        #expect(try getXattr(viewer.path("before.txt"), "user.note") == Array("kept".utf8))
        try withFile(viewer.path("before.txt"), O_RDONLY) { fd in
            #expect(expectSuccess("flock(LOCK_SH)") { flock(fd, LOCK_SH | LOCK_NB) } != nil)
            _ = flock(fd, LOCK_UN)
        }
        #expect(try viewer.syncStatus().pendingEntries == 0, "a viewer's mount queues nothing")
        let status = try viewer.expectCommand(["status", viewer.root])
        #expect(status.stdout.contains("read-only: this token has a viewer's rights in 'box'"), "\(status)")

        // The same calls succeed on the editor's mount, and the viewer follows what they did.
        expectChanges(refused: false, in: editor)
        try writeFile(editor.path("after.txt"), "written after")
        #expect(editor.expectSync())
        #expect(
            waitUntil(timeout: 30) {
                try readText(viewer.path("after.txt")) == "written after"
                    && listDirectory(viewer.root).sorted() == ["after.txt", "link", "new.txt", "newdir", "renamed.txt"]
            }, "\(viewer.daemonLog())")
        #expect(try viewer.syncStatus().pendingEntries == 0)
    }

    /// An editor's token made a viewer's while a change is queued: the refused upload makes the
    /// mount read its role again; the change stays queued (status says it waits for write
    /// access) and goes once the token is an editor's again (learnt at the reconnection).
    @Test func changesQueuedWhenTheRoleDropsWaitForWriteAccess() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        let server = try ServerProcess.start(root: base + "/server")
        defer {
            server.tearDown()
            try? FileManager.default.removeItem(atPath: base)
        }
        let token = try server.createToken(container: "box", label: "laptop")
        let mount = try TestFolder.make(
            .mount, sharedContainer: server.url("box"), mountArguments: ["--upload-delay", "20", "--token-file", token])
        defer { mount.tearDown() }
        try server.setTokenRole(label: "laptop", "viewer")
        try writeFile(mount.path("draft.txt"), "queued while a viewer")
        #expect(
            waitUntil(timeout: 30) {
                let status = try mount.runCommand(["status", mount.root])
                return status.stdout.contains(
                    "read-only: this token has a viewer's rights in 'box'; 1 queued change waits for write access")
            }, "\(mount.daemonLog())")
        expectErrno(EROFS, "create once read-only") { open(mount.path("other.txt"), O_CREAT | O_WRONLY, 0o644) }
        #expect(try mount.syncStatus().pendingEntries == 1, "the change stays queued")
        #expect(try server.entryCount("box", liveOnly: true) == 0, "nothing reached the server")
        #expect(try readText(mount.path("draft.txt")) == "queued while a viewer")

        // An editor's again; the mount learns it when it reconnects.
        try server.setTokenRole(label: "laptop", "editor")
        try server.restart()
        #expect(
            waitUntil(timeout: 40) { try server.entryCount("box", liveOnly: true) == 1 }, "\(mount.daemonLog())")
        #expect(mount.expectSync(timeout: 40))
        expectSuccess("create once writable") { close(open(mount.path("other.txt"), O_CREAT | O_WRONLY, 0o644)) }
    }

    /// The calls `--read-only` refuses (ReadOnlyMountTest), each expected to fail with EROFS
    /// (`refused`) or to succeed, in an order in which each succeeding one makes sense.
    private func expectChanges(
        refused: Bool, in folder: TestFolder, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        func expect(_ operation: String, _ body: () -> Int32) {
            if refused {
                expectErrno(EROFS, operation, sourceLocation: sourceLocation, body)
            } else {
                expectSuccess(operation, sourceLocation: sourceLocation, body)
            }
        }
        let file = folder.path("before.txt")
        expect("create") { closing(open(folder.path("new.txt"), O_CREAT | O_WRONLY, 0o644)) }
        expect("open for writing") { closing(open(file, O_WRONLY)) }
        expect("open with O_TRUNC") { closing(open(file, O_WRONLY | O_TRUNC)) }
        expect("truncate") { truncate(file, 0) }
        expect("chmod") { chmod(file, 0o600) }
        expect("utimes") { utimes(file, nil) }
        expect("setxattr") { Linux.setxattr(file, "user.other", Array("x".utf8), 0) }
        expect("removexattr") { Linux.removexattr(file, "user.other") }
        expect("mkdir") { mkdir(folder.path("newdir"), 0o755) }
        expect("symlink") { symlink("renamed.txt", folder.path("link")) }
        expect("rename") { rename(file, folder.path("renamed.txt")) }
        expect("rmdir") { rmdir(folder.path("dir")) }
        expect("unlink") { unlink(refused ? file : folder.path("new.txt")) }
        if !refused {
            // `new.txt` again, so both mounts end with the same names.
            expect("create again") { closing(open(folder.path("new.txt"), O_CREAT | O_WRONLY, 0o644)) }
        }
    }

    /// Closes `fd` if the open succeeded; returns what the open returned.
    private func closing(_ fd: Int32) -> Int32 {
        if fd >= 0 { close(fd) }
        return fd
    }
}
