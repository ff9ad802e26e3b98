import Foundation
import Glibc
import Testing

/// Symbolic links, and the node types SyncFS refuses by design (FIFOs, devices, sockets, hard
/// links: EPERM on the mount, a documented deviation; they work on a plain directory).
@Suite("POSIX links and special files")
struct PosixSuiteLinks {
    @Test(arguments: TestFolder.Kind.allCases)
    func symlinksAndReadlink(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("target"), "through the link")
            try makeDirectory(folder.path("dir"))
            try writeFile(folder.path("dir/inside"), "inside")

            try makeSymlink(target: "target", at: folder.path("relative"))
            try makeSymlink(target: folder.path("target"), at: folder.path("absolute"))
            try makeSymlink(target: "dir", at: folder.path("dirlink"))
            try makeSymlink(target: "does/not/exist", at: folder.path("dangling"))
            let longTarget = String(repeating: "long/", count: 200) + "end"
            try makeSymlink(target: longTarget, at: folder.path("long"))

            #expect(try readLink(folder.path("relative")) == "target")
            #expect(try readLink(folder.path("absolute")) == folder.path("target"))
            #expect(try readLink(folder.path("dangling")) == "does/not/exist")
            #expect(try readLink(folder.path("long")) == longTarget)

            let link = try lstatPath(folder.path("relative"))
            #expect(isSymlink(link))
            #expect(link.st_size == 6, "a symlink's size is its target's length")
            #expect(try lstatPath(folder.path("long")).st_size == off_t(longTarget.utf8.count))
            #expect(isRegular(try statPath(folder.path("relative"))), "stat follows the link")
            #expect(try readText(folder.path("relative")) == "through the link")
            #expect(try readText(folder.path("absolute")) == "through the link")
            #expect(try readText(folder.path("dirlink/inside")) == "inside")
            #expect(try listDirectory(folder.path("dirlink")) == ["inside"])

            // Writing through a link writes the target.
            try writeFile(folder.path("relative"), "rewritten")
            #expect(try readText(folder.path("target")) == "rewritten")
            #expect(isSymlink(try lstatPath(folder.path("relative"))))

            // A dangling link: lstat works, stat and open do not; O_CREAT through it creates the target.
            expectErrno(ENOENT, "stat(dangling)") {
                var info = stat()
                return stat(folder.path("dangling"), &info)
            }
            try makeSymlink(target: "created-through-link", at: folder.path("creator"))
            try withFile(folder.path("creator"), O_WRONLY | O_CREAT, 0o644) { try writeAll($0, bytes("made")) }
            #expect(try readText(folder.path("created-through-link")) == "made")

            expectErrno(EINVAL, "readlink(regular file)") {
                var buffer = [CChar](repeating: 0, count: 64)
                return readlink(folder.path("target"), &buffer, 64)
            }
            expectErrno(EEXIST, "symlink over an existing name") {
                symlink("x", folder.path("target"))
            }

            // Unlinking a link leaves its target; rmdir refuses a link to a directory.
            try posix("unlink(relative)") { unlink(folder.path("relative")) }
            #expect(!pathExists(folder.path("relative")))
            #expect(try readText(folder.path("target")) == "rewritten")
            expectErrno(ENOTDIR, "rmdir(symlink to dir)") { rmdir(folder.path("dirlink")) }
            try posix("rename(dangling, renamed)") { rename(folder.path("dangling"), folder.path("renamed")) }
            #expect(try readLink(folder.path("renamed")) == "does/not/exist")
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func symlinkLoopsGiveELOOP(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try makeSymlink(target: "loop-b", at: folder.path("loop-a"))
            try makeSymlink(target: "loop-a", at: folder.path("loop-b"))
            try makeSymlink(target: "self", at: folder.path("self"))
            expectErrno(ELOOP, "open(loop-a)") { open(folder.path("loop-a"), O_RDONLY | O_CLOEXEC) }
            expectErrno(ELOOP, "stat(loop-a)") {
                var info = stat()
                return stat(folder.path("loop-a"), &info)
            }
            expectErrno(ELOOP, "open(self)") { open(folder.path("self"), O_RDONLY | O_CLOEXEC) }
            expectErrno(ELOOP, "open(self/x, O_CREAT)") {
                open(folder.path("self/x"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            }
            #expect(isSymlink(try lstatPath(folder.path("loop-a"))), "lstat does not follow")

            // O_NOFOLLOW on a symlink is ELOOP too.
            try writeFile(folder.path("real"), "real")
            try makeSymlink(target: "real", at: folder.path("link"))
            expectErrno(ELOOP, "open(link, O_NOFOLLOW)") {
                open(folder.path("link"), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            }

            // A long chain of links (more than the kernel's 40) is ELOOP as well.
            for index in 0..<45 {
                try makeSymlink(target: index == 0 ? "real" : "chain\(index - 1)", at: folder.path("chain\(index)"))
            }
            #expect(try readText(folder.path("chain30")) == "real")
            expectErrno(ELOOP, "open(chain44)") { open(folder.path("chain44"), O_RDONLY | O_CLOEXEC) }
        }
    }

    // MARK: - Refused node types

    @Test(arguments: TestFolder.Kind.allCases)
    func fifo(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("fifo")
            switch kind {
            case .plain:
                try posix("mknod(S_IFIFO)") { mknod(path, S_IFIFO | 0o644, 0) }
                #expect(fileType(try lstatPath(path)) == S_IFIFO)
                try posix("unlink(fifo)") { unlink(path) }
                try posix("mkfifo") { mkfifo(path, 0o644) }
                #expect(fileType(try lstatPath(path)) == S_IFIFO)
            case .mount:
                expectErrno(EPERM, "mknod(S_IFIFO) on the mount") { mknod(path, S_IFIFO | 0o644, 0) }
                expectErrno(EPERM, "mkfifo on the mount") { mkfifo(path, 0o644) }
                #expect(!pathExists(path), "a refused mknod leaves no name behind")
            }
        }
    }

    /// mknod of a regular file is an ordinary create, on both kinds.
    @Test(arguments: TestFolder.Kind.allCases)
    func mknodRegularFile(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try posix("mknod(S_IFREG)") { mknod(folder.path("regular"), S_IFREG | 0o640, 0) }
            let info = try lstatPath(folder.path("regular"))
            #expect(isRegular(info))
            #expect(permissions(info) == 0o640)
            #expect(info.st_size == 0)
            try writeFile(folder.path("regular"), "usable")
            #expect(try readText(folder.path("regular")) == "usable")
            expectErrno(EEXIST, "mknod(existing)") { mknod(folder.path("regular"), S_IFREG | 0o644, 0) }
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func deviceNodes(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("null")
            let devNull: dev_t = (1 << 8) | 3  // makedev(1, 3)
            switch kind {
            case .plain:
                try posix("mknod(S_IFCHR 1:3)") { mknod(path, S_IFCHR | 0o644, devNull) }
                let info = try lstatPath(path)
                #expect(fileType(info) == S_IFCHR)
                #expect(info.st_rdev == devNull)
            case .mount:
                expectErrno(EPERM, "mknod(S_IFCHR) on the mount") { mknod(path, S_IFCHR | 0o644, devNull) }
                expectErrno(EPERM, "mknod(S_IFBLK) on the mount") {
                    mknod(folder.path("blk"), S_IFBLK | 0o644, devNull)
                }
                #expect(!pathExists(path))
                #expect(!pathExists(folder.path("blk")))
            }
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func hardLinks(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("original"), "shared")
            switch kind {
            case .plain:
                try posix("link") { link(folder.path("original"), folder.path("second")) }
                #expect(try statPath(folder.path("original")).st_nlink == 2)
                #expect(try statPath(folder.path("second")).st_ino == (try statPath(folder.path("original"))).st_ino)
                #expect(try readText(folder.path("second")) == "shared")
            case .mount:
                expectErrno(EPERM, "link() on the mount") { link(folder.path("original"), folder.path("second")) }
                expectErrno(EPERM, "linkat() on the mount") {
                    linkat(AT_FDCWD, folder.path("original"), AT_FDCWD, folder.path("third"), 0)
                }
                #expect(!pathExists(folder.path("second")))
                #expect(!pathExists(folder.path("third")))
                #expect(try statPath(folder.path("original")).st_nlink == 1)
                #expect(try readText(folder.path("original")) == "shared")
            }
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func unixSocketBind(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            let path = folder.path("sock")
            let fd = try posix("socket(AF_UNIX)") {
                socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            }
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let pathBytes = Array(path.utf8)
            try #require(pathBytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket path fits sun_path")
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: pathBytes)
                raw[pathBytes.count] = 0
            }
            let bindCall = {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
            switch kind {
            case .plain:
                try posix("bind(unix socket)") { bindCall() }
                #expect(fileType(try lstatPath(path)) == S_IFSOCK)
            case .mount:
                expectErrno(EPERM, "bind(unix socket) on the mount") { bindCall() }
                #expect(!pathExists(path))
            }
        }
    }
}
