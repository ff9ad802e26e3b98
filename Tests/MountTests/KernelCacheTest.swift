import Foundation
import Glibc
import TestSupport
import Testing

/// The kernel keeps names (found and not found) and attributes for a day
/// (`KernelCachePolicy.timeout`): that is only right if every remote change invalidates what the
/// receiving mount's kernel has cached. Each case here first makes B's kernel cache the answer
/// (a lookup that found the name, one that did not, the attributes, a listing), then changes it
/// on A; B must show the change as soon as it arrives. Without the invalidation B would show the
/// cached answer for a day, far beyond the generous wait, so each `#expect` fails on a missing
/// invalidation. Run with the inotify echo (remote creates, deletes and moves applied through
/// the mount point) and without it (applied in the tree, invalidations sent by the follower).
@Suite(.serialized)
struct KernelCacheTest {
    /// `st_mtim` of `path` as (seconds, nanoseconds).
    private func mtime(_ path: String) throws -> (Int, Int) {
        let info = try lstatPath(path)
        return (info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
    }

    @Test(arguments: [true, false])
    func remoteChangesReachNamesAndAttributesTheKernelHasCached(echo: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, argumentsB: echo ? [] : ["--no-inotify-echo"]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("d"))
            try writeFile(a.path("d/old.txt"), "moved")
            try writeFile(a.path("d/gone.txt"), "deleted")
            try writeFile(a.path("d/mode.txt"), "mode", mode: 0o644)
            try writeFile(a.path("d/grow.txt"), "short")
            try makeDirectory(a.path("d/sub"))
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { (try? readText(b.path("d/grow.txt"))) == "short" }, "\(mounts.logs())")

            // B's kernel caches every answer: positive and negative entries, attributes, a listing.
            for name in ["old.txt", "gone.txt", "mode.txt", "grow.txt", "sub"] {
                _ = try lstatPath(b.path("d/" + name))
            }
            #expect(try readText(b.path("d/old.txt")) == "moved")
            #expect(try readText(b.path("d/gone.txt")) == "deleted")
            for name in ["new.txt", "renamed.txt", "sub/deep.txt"] {
                #expect(!pathExists(b.path("d/" + name)), "\(name) is not there yet (a cached negative entry)")
            }
            #expect(try listDirectory(b.path("d")).sorted() == ["gone.txt", "grow.txt", "mode.txt", "old.txt", "sub"])
            #expect(permissions(try lstatPath(b.path("d/mode.txt"))) == 0o644)
            let sizeBefore = try lstatPath(b.path("d/grow.txt")).st_size
            #expect(sizeBefore == 5)

            try writeFile(a.path("d/new.txt"), "created")
            try writeFile(a.path("d/sub/deep.txt"), "deep")
            try posix("rename") { rename(a.path("d/old.txt"), a.path("d/renamed.txt")) }
            try posix("unlink") { unlink(a.path("d/gone.txt")) }
            try posix("chmod") { chmod(a.path("d/mode.txt"), 0o600) }
            var times = [timespec(tv_sec: 1_500_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 0)]
            try posix("utimensat") { utimensat(AT_FDCWD, a.path("d/mode.txt"), &times, 0) }
            try writeFile(a.path("d/grow.txt"), "a much longer content than before")
            #expect(a.expectSync())

            let logs = { mounts.logs() }
            #expect(
                waitUntil(timeout: 30) { (try? readText(b.path("d/new.txt"))) == "created" },
                "negative entry: \(logs())")
            #expect(
                waitUntil(timeout: 30) { (try? readText(b.path("d/sub/deep.txt"))) == "deep" },
                "negative entry in a subdirectory: \(logs())")
            #expect(
                waitUntil(timeout: 30) { (try? readText(b.path("d/renamed.txt"))) == "moved" },
                "rename, new name: \(logs())")
            #expect(waitUntil(timeout: 30) { !pathExists(b.path("d/old.txt")) }, "rename, old name: \(logs())")
            #expect(waitUntil(timeout: 30) { !pathExists(b.path("d/gone.txt")) }, "delete: \(logs())")
            #expect(
                waitUntil(timeout: 30) { (try? lstatPath(b.path("d/mode.txt"))).map(permissions) == 0o600 },
                "chmod: \(logs())")
            #expect(
                waitUntil(timeout: 30) { (try? mtime(b.path("d/mode.txt")))?.0 == 1_500_000_000 }, "mtime: \(logs())")
            #expect(
                waitUntil(timeout: 30) {
                    (try? lstatPath(b.path("d/grow.txt")))?.st_size == 33
                        && (try? readText(b.path("d/grow.txt"))) == "a much longer content than before"
                }, "content and size: \(logs())")
            #expect(
                waitUntil(timeout: 30) {
                    (try? listDirectory(b.path("d")))?.sorted() == [
                        "grow.txt", "mode.txt", "new.txt", "renamed.txt", "sub",
                    ]
                }, "listing: \(logs())")
        }
    }

    /// B's kernel keeps directory listings across opens (`KernelCachePolicy.cachesListings`): a
    /// listing B has read twice (so it comes from the cache), without ever looking a name up,
    /// still shows a remote create, delete and rename at once; a local create shows too.
    @Test func remoteChangesReachACachedListing() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("l"))
            for name in ["one", "two", "three"] { try writeFile(a.path("l/" + name), name) }
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { (try? listDirectory(b.path("l")))?.count == 3 })
            #expect(try listDirectory(b.path("l")).sorted() == ["one", "three", "two"])
            try writeFile(a.path("l/four"), "four")
            try posix("unlink") { unlink(a.path("l/one")) }
            try posix("rename") { rename(a.path("l/two"), a.path("l/deux")) }
            #expect(a.expectSync())
            #expect(
                waitUntil(timeout: 30) { (try? listDirectory(b.path("l")))?.sorted() == ["deux", "four", "three"] },
                "\((try? listDirectory(b.path("l"))) ?? []) \(mounts.logs())")
            try writeFile(b.path("l/local"), "here")
            #expect(try listDirectory(b.path("l")).sorted() == ["deux", "four", "local", "three"])
        }
    }

    /// Every directory read is a READDIRPLUS (`KernelCachePolicy.readdirPlusAlways`): a listing
    /// on B by a reader that stats what it lists hands the kernel each name's attributes
    /// (`ReaddirPlusReaders`), which it then serves from its cache without a lookup. A remote
    /// chmod, mtime change and content change of a name B only ever listed still show at once,
    /// as does a remote delete of one.
    @Test(arguments: [true, false])
    func remoteChangesReachAttributesFromAListing(echo: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, argumentsB: echo ? [] : ["--no-inotify-echo"]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("p"))
            try makeDirectory(a.path("learn"))
            try writeFile(a.path("learn/one"), "1")
            for index in 0..<300 { try writeFile(a.path("p/f\(index)"), "content \(index)", mode: 0o644) }
            #expect(a.expectSync())
            // Not listed yet on B: looked up by name only.
            #expect(
                waitUntil(timeout: 60) { pathExists(b.path("p/f299")) && pathExists(b.path("learn/one")) },
                "\(mounts.logs())")
            // One `ls -l` process lists `learn` and stats what is in it, so its listing of `p`
            // carries every name's attributes, which the kernel then serves from its cache.
            let listing = ModelProcess.run(["ls", "-l", b.path("learn"), b.path("p")])
            #expect(listing.ok && listing.stdout.split(separator: "\n").count >= 300, "\(listing)")
            #expect(try listDirectory(b.path("p")).count == 300)
            for name in ["f7", "f150", "f299"] {
                #expect(permissions(try lstatPath(b.path("p/" + name))) == 0o644)
            }
            #expect(try lstatPath(b.path("p/f150")).st_size == 11)

            try posix("chmod") { chmod(a.path("p/f7"), 0o600) }
            var times = [timespec(tv_sec: 1_500_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 0)]
            try posix("utimensat") { utimensat(AT_FDCWD, a.path("p/f299"), &times, 0) }
            try writeFile(a.path("p/f150"), "a longer content than before")
            try posix("unlink") { unlink(a.path("p/f42")) }
            #expect(a.expectSync())

            let logs = { mounts.logs() }
            #expect(
                waitUntil(timeout: 30) { (try? lstatPath(b.path("p/f7"))).map(permissions) == 0o600 },
                "chmod: \(logs())")
            #expect(
                waitUntil(timeout: 30) { (try? mtime(b.path("p/f299")))?.0 == 1_500_000_000 }, "mtime: \(logs())")
            #expect(
                waitUntil(timeout: 30) {
                    (try? lstatPath(b.path("p/f150")))?.st_size == 28
                        && (try? readText(b.path("p/f150"))) == "a longer content than before"
                }, "content and size: \(logs())")
            #expect(waitUntil(timeout: 30) { !pathExists(b.path("p/f42")) }, "delete: \(logs())")
            #expect(waitUntil(timeout: 30) { (try? listDirectory(b.path("p")))?.count == 299 }, "listing: \(logs())")
        }
    }

    /// A remote rename of a directory B has walked: the old path and everything under it are
    /// gone at once, the new one leads to the same content.
    @Test func aRemoteDirectoryRenameReachesAWalkedTree() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("top"))
            try makeDirectory(a.path("top/inner"))
            try writeFile(a.path("top/inner/leaf.txt"), "leaf")
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { (try? readText(b.path("top/inner/leaf.txt"))) == "leaf" })
            _ = try lstatPath(b.path("top/inner/leaf.txt"))
            #expect(!pathExists(b.path("renamed/inner/leaf.txt")))
            try posix("rename") { rename(a.path("top"), a.path("renamed")) }
            #expect(a.expectSync())
            #expect(
                waitUntil(timeout: 30) { (try? readText(b.path("renamed/inner/leaf.txt"))) == "leaf" },
                "\(mounts.logs())")
            #expect(waitUntil(timeout: 30) { !pathExists(b.path("top")) }, "\(mounts.logs())")
        }
    }

    /// `security.*` labels other than `security.capability`, and POSIX ACLs, are "not
    /// supported" on the folder (so `ls -l` stops asking for every file; the mount does not
    /// declare ACL support, `KernelCachePolicy.declaresPosixACL`); `security.capability` stays
    /// "no such attribute", and `user.*` works. Without ACL support the kernel applies the umask
    /// and checks permissions from the mode bits.
    @Test func securityLabelsAreNotSupportedAndAskedOnce() throws {
        try TestFolder.with(.mount) { folder in
            let path = folder.path("f")
            try writeFile(path, "f")
            for name in ["security.selinux", "security.SMACK64", "security.test"] {
                expectErrno(EOPNOTSUPP, "getxattr(\(name))") { Linux.getxattr(path, name, size: 100).0 }
            }
            expectErrno(ENODATA, "getxattr(security.capability)") {
                Linux.getxattr(path, "security.capability", size: 100).0
            }
            for name in ["system.posix_acl_access", "system.posix_acl_default"] {
                expectErrno(EOPNOTSUPP, "getxattr(\(name))") { Linux.getxattr(path, name, size: 100).0 }
                expectErrno(EOPNOTSUPP, "getxattr(\(name)) of a directory") {
                    Linux.getxattr(folder.path("."), name, size: 100).0
                }
            }
            try setXattr(path, "user.kept", Array("v".utf8))
            #expect(try getXattr(path, "user.kept") == Array("v".utf8))

            // The umask applies (a child process: the umask is the whole test process's).
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = ["-c", "umask 027 && : > \"$0/masked\" && mkdir \"$0/masked-dir\"", folder.path(".")]
            try shell.run()
            shell.waitUntilExit()
            #expect(shell.terminationStatus == 0)
            #expect(permissions(try lstatPath(folder.path("masked"))) == 0o640)
            #expect(permissions(try lstatPath(folder.path("masked-dir"))) == 0o750)
        }
    }
}
