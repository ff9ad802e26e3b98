import Foundation
import Glibc
import TestSupport
import Testing

/// The trust boundary through a real root mount: the built binary mounts a container
/// served by `Support/hostile_server.py`, whose feed mixes every class of bad remote entry (names
/// `..`, `.`, `a/b`, NUL, empty, 256 bytes; sizes and chunk lengths that do not add up; bad
/// symlink targets; manifests on directories and symlinks; an entry inside itself; a parent
/// cycle; a root that is a file; a `security.` xattr; a directory re-sent as a file under an open
/// handle; setuid modes; symlinks pointing out; chunks that lie) with good entries. The inotify
/// echo is on (the default). The hostile entries aim only at a sentinel tree beside the mount
/// point (`MOUNT/..`), inside the test's own temporary directory.
@Suite(.serialized)
struct HostileContainerMountTest {
    @Test func aHostileContainerChangesNothingOutsideTheMountAndTheGoodEntriesStillSync() throws {
        let server = try HostileServerProcess.start()
        defer { server.stop() }
        let folder = try TestFolder.make(
            .mount, sharedContainer: server.url, mountArguments: ["--token-file", server.tokenFile])
        defer { folder.tearDown() }
        let logs = { "daemon log:\n\(folder.daemonLog())\nserver log:\n\(server.log())" }

        // Phase 1: a good directory; the test holds a file in it and the directory open.
        #expect(waitUntil(timeout: 30) { pathExists(folder.path("docs/readme.txt")) }, "\(logs())")
        let readme = try openFile(folder.path("docs/readme.txt"), O_RDONLY)
        let docs = try openFile(folder.path("docs"), O_RDONLY | O_DIRECTORY)
        var openDescriptors = [readme, docs]
        defer { for descriptor in openDescriptors { close(descriptor) } }

        // The sentinel beside the mount point, fingerprinted with its parent's listing.
        let sentinel = folder.baseDir + "/sentinel"
        try makeSentinel(sentinel)
        let before = TreeFingerprint.of(sentinel)
        let namesBefore = try Set(listDirectory(folder.baseDir))
        let baseModeBefore = permissions(try lstatPath(folder.baseDir))

        let expected = try server.release(sentinel: sentinel)
        #expect(
            waitUntil(timeout: 60) {
                try readText(folder.path("good-2.txt")) == expected.good["good-2.txt"]
                    && readText(folder.path("later/inside.txt")) == expected.good["later/inside.txt"]
            }, "the good entries after the hostile ones arrive; \(logs())")

        // Nothing outside the mount changed.
        let after = TreeFingerprint.of(sentinel)
        #expect(after == before, "the sentinel changed: \(TreeFingerprint.difference(before, after))")
        #expect(try Set(listDirectory(folder.baseDir)) == namesBefore, "nothing created or deleted beside the mount")
        #expect(permissions(try lstatPath(folder.baseDir)) == baseModeBefore)

        // The good entries, with their content, modes and symlink targets.
        for (path, content) in expected.good.sorted(by: { $0.key < $1.key }) {
            #expect((try? readText(folder.path(path))) == content, "\(path)")
        }
        for (path, mode) in expected.modes.sorted(by: { $0.key < $1.key }) {
            let actual = try permissions(lstatPath(folder.path(path)))
            #expect(actual == mode_t(mode), "\(path): \(String(actual, radix: 8)), setuid/setgid not applied")
        }
        for (path, target) in expected.symlinks.sorted(by: { $0.key < $1.key }) {
            let isLink = try isSymlink(lstatPath(folder.path(path)))
            #expect(isLink && (try? readLink(folder.path(path))) == target, "\(path) is a symlink to \(target)")
        }
        let rootNames = Set(try listDirectory(folder.root))
        for name in expected.absentNames { #expect(!rootNames.contains(name), "\(name) is not in the mount") }
        #expect(isDirectory(try lstatPath(folder.path("docs"))), "docs stays a directory")

        // The open handle and directory keep working (or fail cleanly), and nothing goes through them.
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = pread(readme, &buffer, buffer.count, 0)
        if count >= 0 {
            #expect(String(decoding: buffer.prefix(count), as: UTF8.self) == expected.good["docs/readme.txt"])
        } else {
            #expect([EIO, ESTALE].contains(errno), "the open handle fails cleanly: \(errnoName(errno))")
        }
        var directoryInfo = stat()
        #expect(
            fstat(docs, &directoryInfo) == 0 || [EIO, ESTALE].contains(errno), "the open directory: \(errnoName(errno))"
        )

        // Chunks that lie: a read fails with an error, never wrong bytes.
        for path in expected.lying {
            let result = Result { try readFile(folder.path(path)) }
            if case .success(let bytes) = result {
                Issue.record("\(path): the read of lying content gave \(bytes.count) bytes")
            }
        }

        // Every refusal is in `status --json`, with its file ID.
        let status: RefusalStatus = try folder.statusJSON(of: folder.root)
        let refused = Set((status.refusedRemoteEntries ?? []).map(\.fileID))
        for (id, what) in expected.refused.sorted(by: { $0.key < $1.key }) {
            #expect(refused.contains(id), "\(what) (\(id)) is listed as refused")
        }
        #expect(expected.cycle.contains { refused.contains($0) }, "the parent cycle is listed as refused")
        #expect((status.refusedRemoteEntries ?? []).allSatisfy { !$0.reason.isEmpty && $0.version > 0 })

        // Each refusal is logged once (with its file ID), not at every retry.
        let log = (try? readText(folder.logPath)) ?? ""
        for id in expected.refused.keys.sorted() + expected.cycle where refused.contains(id) {
            let lines = log.split(separator: "\n").filter { $0.contains("refused remote entry \(id)") }.count
            let what = expected.refused[id] ?? "a directory in the parent cycle"
            #expect(lines == 1, "the refusal of \(what) (\(id)) is logged once, not \(lines) times")
        }

        // The mount is nosuid,nodev and still unmounts cleanly (once the test's descriptors are closed).
        let options = mountOptions(folder.root)
        #expect(options.contains("nosuid") && options.contains("nodev"), "mount options: \(options)")
        for descriptor in openDescriptors { close(descriptor) }
        openDescriptors = []
        try folder.unmount()
        #expect(!TestFolder.isMounted(folder.root))
    }

    /// `victim.txt` (0644), `doomed.txt` (0600), `sub/inner.txt` (0640), `link` -> `victim.txt`.
    private func makeSentinel(_ path: String) throws {
        try makeDirectory(path)
        try makeDirectory(path + "/sub")
        try writeFile(path + "/victim.txt", "the sentinel's own bytes\n", mode: 0o644)
        try writeFile(path + "/doomed.txt", "must not be deleted\n", mode: 0o600)
        try writeFile(path + "/sub/inner.txt", "inner\n", mode: 0o640)
        try posix("chmod") { chmod(path + "/victim.txt", 0o644) }
        try posix("chmod") { chmod(path + "/doomed.txt", 0o600) }
        try posix("chmod") { chmod(path + "/sub/inner.txt", 0o640) }
        try makeSymlink(target: "victim.txt", at: path + "/link")
    }

    /// The options field of `path`'s line in /proc/mounts.
    private func mountOptions(_ path: String) -> [String] {
        let table = (try? readText("/proc/mounts")) ?? ""
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 3, fields[1] == path { return fields[3].split(separator: ",").map(String.init) }
        }
        return []
    }
}
