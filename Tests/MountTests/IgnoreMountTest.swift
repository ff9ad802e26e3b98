import Foundation
import Glibc
import TestSupport
import Testing

/// Ignore patterns on real mounts (doc/SEMANTICS.md, "Ignored paths on a mount"): two mounts of
/// one container, local and through `serve`. Absence on B is asserted only once a file written
/// after the ignored ones has arrived there (the uploader takes changes oldest first).
@Suite(.serialized)
struct IgnoreMountTest {
    private func status(_ mount: TestFolder, _ extra: [String] = []) throws -> String {
        ModelProcess.run([try TestFolder.binaryPath(), "status", mount.root] + extra, timeout: 60).stdout
    }

    private func state(_ path: String) -> String? {
        (try? getXattr(path, "user.syncfs.state")).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: [false, true]) func editorFilesNeverReachTheOtherMount(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path(".notes.txt.swp"), "vim swap")
            try writeFile(a.path(".~lock.report.odt#"), "lock")
            try writeFile(a.path("report.txt"), "report")
            #expect(waitUntil { try readText(b.path("report.txt")) == "report" }, "\(mounts.logs())")
            #expect(a.expectSync())
            #expect(try listDirectory(b.root) == ["report.txt"], "the editor files stay on A")
            #expect(
                waitUntil { state(a.path(".notes.txt.swp")) == "ignored" }, "\(state(a.path(".notes.txt.swp")) ?? "-")")
            #expect(state(a.path("report.txt")) == "local")
            let human = try status(a)
            #expect(human.contains("ignored: 2 changes held here"), "\(human)")
            let listing = try status(a, ["--ignored"])
            #expect(listing.contains("ignored .notes.txt.swp ((defaults):1: .*.swp)"), "\(listing)")
            #expect(listing.contains("ignored .~lock.report.odt# ((defaults):9: .~lock.*#)"), "\(listing)")
            #expect(!listing.contains("ignored report.txt"), "\(listing)")
        }
    }

    @Test(arguments: [false, true]) func theVimSaveKeepsTheFileSyncedWithoutAConflictCopy(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("notes.txt"), "one\n")
            #expect(waitUntil { try readText(b.path("notes.txt")) == "one\n" }, "\(mounts.logs())")
            // vim with `backupcopy=no`: notes.txt → notes.txt~, a new notes.txt, the backup removed.
            try posix("rename") { rename(a.path("notes.txt"), a.path("notes.txt~")) }
            try writeFile(a.path("notes.txt"), "two\n")
            try posix("unlink") { unlink(a.path("notes.txt~")) }
            #expect(waitUntil { try readText(b.path("notes.txt")) == "two\n" }, "\(mounts.logs())")
            #expect(a.expectSync() && b.expectSync())
            #expect(try listDirectory(a.root) == ["notes.txt"])
            #expect(try listDirectory(b.root) == ["notes.txt"], "no conflict copy, no backup")
        }
    }

    @Test(arguments: [false, true]) func aSyncedIgnoreFileKeepsNodeModulesHere(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path(".syncfs-ignore"), "node_modules/\n")
            #expect(waitUntil { try readText(b.path(".syncfs-ignore")) == "node_modules/\n" }, "\(mounts.logs())")
            try makeDirectory(a.path("node_modules"))
            try makeDirectory(a.path("node_modules/left-pad"))
            try writeFile(a.path("node_modules/left-pad/index.js"), "module.exports = 1\n")
            try writeFile(a.path("app.js"), "require('left-pad')\n")
            #expect(waitUntil { try readText(b.path("app.js")) == "require('left-pad')\n" }, "\(mounts.logs())")
            #expect(a.expectSync())
            #expect(try listDirectory(b.root).sorted() == [".syncfs-ignore", "app.js"])
            let listing = try status(a, ["--ignored"])
            #expect(listing.contains("ignored node_modules (.syncfs-ignore:1: node_modules/)"), "\(listing)")
            #expect(
                listing.contains("ignored by synced .syncfs-ignore: 3 changes"),
                "the folder, its folder and file\n\(listing)")
        }
    }

    @Test(arguments: [false, true]) func aSyncedFileThatBecomesIgnoredStaysInTheContainer(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("app.log"), "v1\n")
            #expect(waitUntil { try readText(b.path("app.log")) == "v1\n" }, "\(mounts.logs())")
            try writeFile(a.path(".syncfs-ignore"), "*.log\n")
            #expect(waitUntil { pathExists(b.path(".syncfs-ignore")) }, "\(mounts.logs())")
            try writeFile(a.path("app.log"), "v2\n")
            try writeFile(a.path("after-edit.txt"), "x")
            #expect(waitUntil { try readText(b.path("after-edit.txt")) == "x" }, "\(mounts.logs())")
            #expect(a.expectSync())
            #expect(try readText(b.path("app.log")) == "v1\n", "the edit is held on A")
            try posix("unlink") { unlink(a.path("app.log")) }
            try writeFile(a.path("after-delete.txt"), "y")
            #expect(waitUntil { try readText(b.path("after-delete.txt")) == "y" }, "\(mounts.logs())")
            #expect(a.expectSync())
            #expect(try readText(b.path("app.log")) == "v1\n", "ignoring never deletes in the container")
        }
    }

    /// A token holder's synced `*` would stop every upload of the other machines: `status` shows
    /// it there, and a local `!*` overrides it.
    @Test(arguments: [false, true]) func aHostileSyncedIgnoreFileIsVisibleAndOverridden(overServer: Bool) throws {
        let directory = try makeTemporaryDirectory("syncfs-ignore")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let local = directory + "/ignore"
        try writeFile(local, "!*\n", mode: 0o600)
        try SyncedMounts.with(uploadDelay: 20, argumentsA: ["--ignore-file", local], overServer: overServer) {
            mounts in
            let (a, b) = (mounts.a, mounts.b)
            // Written on B (the hostile holder): ignore everything but this file.
            try writeFile(b.path(".syncfs-ignore"), "*\n!.syncfs-ignore\n")
            #expect(waitUntil { pathExists(a.path(".syncfs-ignore")) }, "\(mounts.logs())")
            try writeFile(b.path("held-on-b.txt"), "b")
            try writeFile(a.path("from-a.txt"), "a")
            #expect(waitUntil { try readText(b.path("from-a.txt")) == "a" }, "A's local !* wins\n\(mounts.logs())")
            #expect(b.expectSync())
            #expect(!pathExists(a.path("held-on-b.txt")), "B's own rule holds B's file")
            let onB = try status(b)
            #expect(onB.contains("ignored by synced .syncfs-ignore: 1 change"), "\(onB)")
            let listing = try status(a, ["--ignored"])
            #expect(!listing.contains("ignored from-a.txt"), "\(listing)")
        }
    }

    /// `--no-synced-ignores`: the synced files decide nothing on this mount.
    @Test func noSyncedIgnoresLeavesTheSyncedFilesOut() throws {
        try SyncedMounts.with(uploadDelay: 20, argumentsA: ["--no-synced-ignores"]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(b.path(".syncfs-ignore"), "*.txt\n")
            #expect(waitUntil { pathExists(a.path(".syncfs-ignore")) }, "\(mounts.logs())")
            try writeFile(a.path("from-a.txt"), "a")
            #expect(waitUntil { try readText(b.path("from-a.txt")) == "a" }, "\(mounts.logs())")
        }
    }

    /// A given `--ignore-file` that another user could write fails the mount (exit 65).
    @Test func anUntrustedIgnoreFileFailsTheMount() throws {
        let directory = try makeTemporaryDirectory("syncfs-ignore")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try makeDirectory(directory + "/container")
        try makeDirectory(directory + "/mnt")
        let writable = directory + "/ignore"
        try writeFile(writable, "*.log\n", mode: 0o600)
        chmod(writable, 0o666)
        for file in [writable, directory + "/missing"] {
            let result = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", directory + "/container", directory + "/mnt", "--state-dir",
                    directory + "/state", "--foreground", "--create", "--ignore-file", file,
                ], timeout: 60)
            #expect(result.status == 65, "\(result)")
            #expect(result.stderr.contains("--ignore-file"), "\(result)")
        }
    }
}
