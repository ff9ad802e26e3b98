import Foundation
import Glibc
import Testing

/// Every rename case Linux defines, including renameat2 RENAME_NOREPLACE and RENAME_EXCHANGE.
@Suite("POSIX rename")
struct PosixSuiteRename {
    @Test(arguments: TestFolder.Kind.allCases)
    func renameFileToNewName(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("a"), "alpha")
            let inode = try statPath(folder.path("a")).st_ino
            try makeDirectory(folder.path("dir"))
            try posix("rename(a, b)") { rename(folder.path("a"), folder.path("b")) }
            #expect(!pathExists(folder.path("a")))
            #expect(try readText(folder.path("b")) == "alpha")
            #expect(try statPath(folder.path("b")).st_ino == inode, "a rename keeps the inode")

            // Into another directory, then back out.
            try posix("rename(b, dir/c)") { rename(folder.path("b"), folder.path("dir/c")) }
            #expect(try listDirectory(folder.root).sorted() == ["dir"])
            #expect(try listDirectory(folder.path("dir")) == ["c"])
            #expect(try readText(folder.path("dir/c")) == "alpha")
            #expect(try statPath(folder.path("dir/c")).st_ino == inode)
            try posix("rename(dir/c, d)") { rename(folder.path("dir/c"), folder.path("d")) }
            #expect(try listDirectory(folder.path("dir")).isEmpty)
            #expect(try readText(folder.path("d")) == "alpha")

            // Renaming onto itself is a no-op.
            try posix("rename(d, d)") { rename(folder.path("d"), folder.path("d")) }
            #expect(try readText(folder.path("d")) == "alpha")

            expectErrno(ENOENT, "rename(missing, x)") { rename(folder.path("missing"), folder.path("x")) }
            expectErrno(ENOENT, "rename(d, missing/x)") { rename(folder.path("d"), folder.path("missing/x")) }
            expectErrno(ENOTDIR, "rename(d, d/x) through a file") { rename(folder.path("d"), folder.path("d/x")) }
            #expect(try readText(folder.path("d")) == "alpha")
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func renameOpenFileKeepsTheDescriptor(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("open"), "content")
            try withFile(folder.path("open"), O_RDWR) { fd throws in
                try posix("rename") { rename(folder.path("open"), folder.path("moved")) }
                #expect(try preadBytes(fd, count: 100, offset: 0) == bytes("content"))
                try pwriteBytes(fd, bytes("C"), offset: 0)
            }
            #expect(try readText(folder.path("moved")) == "Content", "writes through the old fd land in the moved file")

            // Written, renamed before close (nothing flushed yet), then closed: the data follows.
            let fd = try openFile(folder.path("fresh"), O_WRONLY | O_CREAT | O_EXCL)
            try writeAll(fd, patternBytes(count: 100_000, seed: 11))
            try posix("rename(fresh, renamed)") { rename(folder.path("fresh"), folder.path("renamed")) }
            try posix("close") { close(fd) }
            #expect(try readFile(folder.path("renamed")) == patternBytes(count: 100_000, seed: 11))
            #expect(!pathExists(folder.path("fresh")))
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func renameOverAnExistingFile(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("new"), "new content")
            try writeFile(folder.path("old"), "old content that is longer")
            let inode = try statPath(folder.path("new")).st_ino
            let oldFD = try openFile(folder.path("old"), O_RDONLY)
            defer { close(oldFD) }
            try posix("rename(new, old)") { rename(folder.path("new"), folder.path("old")) }
            #expect(!pathExists(folder.path("new")))
            #expect(try readText(folder.path("old")) == "new content")
            #expect(try statPath(folder.path("old")).st_ino == inode)
            #expect(try listDirectory(folder.root) == ["old"])
            // The replaced file lives on for whoever had it open (the save-by-rename pattern).
            #expect(try preadBytes(oldFD, count: 100, offset: 0) == bytes("old content that is longer"))
            #expect(try fstatFD(oldFD).st_nlink == 0)
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func renameOverAndOfSymlinks(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("target"), "target")
            try makeSymlink(target: "target", at: folder.path("link"))
            try writeFile(folder.path("file"), "file")
            // Over a symlink: the link is replaced, its target is untouched.
            try posix("rename(file, link)") { rename(folder.path("file"), folder.path("link")) }
            #expect(isRegular(try lstatPath(folder.path("link"))))
            #expect(try readText(folder.path("link")) == "file")
            #expect(try readText(folder.path("target")) == "target")
            // A symlink renamed keeps its target text (a relative link may now dangle).
            try makeSymlink(target: "target", at: folder.path("link2"))
            try makeDirectory(folder.path("sub"))
            try posix("rename(link2, sub/link2)") { rename(folder.path("link2"), folder.path("sub/link2")) }
            #expect(try readLink(folder.path("sub/link2")) == "target")
            expectErrno(ENOENT, "open(dangling after move)") { open(folder.path("sub/link2"), O_RDONLY | O_CLOEXEC) }
            // A directory cannot replace a symlink, even one to a directory: ENOTDIR.
            try makeDirectory(folder.path("dir"))
            try makeSymlink(target: "sub", at: folder.path("dirlink"))
            expectErrno(ENOTDIR, "rename(dir, symlink to dir)") { rename(folder.path("dir"), folder.path("dirlink")) }
            #expect(isSymlink(try lstatPath(folder.path("dirlink"))))
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func renameDirectories(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try makeDirectory(folder.path("src"))
            try makeDirectory(folder.path("src/inner"))
            try writeFile(folder.path("src/inner/f"), "deep")
            try makeDirectory(folder.path("emptyTarget"))

            // Over an empty directory: allowed, the target is replaced.
            try posix("rename(src, emptyTarget)") { rename(folder.path("src"), folder.path("emptyTarget")) }
            #expect(!pathExists(folder.path("src")))
            #expect(try readText(folder.path("emptyTarget/inner/f")) == "deep")

            // Over a non-empty directory: ENOTEMPTY, nothing moves.
            try makeDirectory(folder.path("full"))
            try writeFile(folder.path("full/x"), "x")
            expectErrno(ENOTEMPTY, "rename(dir, non-empty dir)") {
                rename(folder.path("emptyTarget"), folder.path("full"))
            }
            #expect(try readText(folder.path("full/x")) == "x")
            #expect(try readText(folder.path("emptyTarget/inner/f")) == "deep")

            // Into its own subtree: EINVAL.
            expectErrno(EINVAL, "rename(dir, dir/inner/sub)") {
                rename(folder.path("emptyTarget"), folder.path("emptyTarget/inner/sub"))
            }
            expectErrno(EINVAL, "rename(dir, dir/sub)") {
                rename(folder.path("emptyTarget"), folder.path("emptyTarget/sub"))
            }
            #expect(try listDirectory(folder.path("emptyTarget")) == ["inner"])

            // A file over a directory: EISDIR; a directory over a file: ENOTDIR.
            try writeFile(folder.path("file"), "file")
            expectErrno(EISDIR, "rename(file, directory)") { rename(folder.path("file"), folder.path("full")) }
            expectErrno(ENOTDIR, "rename(directory, file)") { rename(folder.path("emptyTarget"), folder.path("file")) }
            #expect(try readText(folder.path("file")) == "file")
            #expect(isDirectory(try statPath(folder.path("full"))))

            // Moving a directory elsewhere keeps its content, and its children resolve.
            try posix("rename(emptyTarget, full/moved)") {
                rename(folder.path("emptyTarget"), folder.path("full/moved"))
            }
            #expect(try readText(folder.path("full/moved/inner/f")) == "deep")
            #expect(try listDirectory(folder.path("full")).sorted() == ["moved", "x"])
            #expect(try listDirectory(folder.root).sorted() == ["file", "full"])
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func renameNoReplace(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("a"), "a")
            try writeFile(folder.path("b"), "b")
            expectErrno(EEXIST, "renameat2(a, b, RENAME_NOREPLACE)") {
                Linux.renameat2(folder.path("a"), folder.path("b"), Linux.renameNoReplace)
            }
            #expect(try readText(folder.path("a")) == "a")
            #expect(try readText(folder.path("b")) == "b")
            try makeDirectory(folder.path("d"))
            expectErrno(EEXIST, "renameat2(a, dir, RENAME_NOREPLACE)") {
                Linux.renameat2(folder.path("a"), folder.path("d"), Linux.renameNoReplace)
            }
            try makeDirectory(folder.path("empty"))
            expectErrno(EEXIST, "renameat2(dir, empty dir, RENAME_NOREPLACE)") {
                Linux.renameat2(folder.path("d"), folder.path("empty"), Linux.renameNoReplace)
            }
            #expect(isDirectory(try statPath(folder.path("d"))))
            try posix("renameat2(a, c, RENAME_NOREPLACE)") {
                Linux.renameat2(folder.path("a"), folder.path("c"), Linux.renameNoReplace)
            }
            #expect(!pathExists(folder.path("a")))
            #expect(try readText(folder.path("c")) == "a")
        }
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func renameExchange(kind: TestFolder.Kind) throws {
        try TestFolder.with(kind) { folder throws in
            try writeFile(folder.path("one"), "first")
            try writeFile(folder.path("two"), "second")
            let inodeOne = try statPath(folder.path("one")).st_ino
            let inodeTwo = try statPath(folder.path("two")).st_ino
            try posix("renameat2(one, two, RENAME_EXCHANGE)") {
                Linux.renameat2(folder.path("one"), folder.path("two"), Linux.renameExchange)
            }
            #expect(try readText(folder.path("one")) == "second")
            #expect(try readText(folder.path("two")) == "first")
            #expect(try statPath(folder.path("one")).st_ino == inodeTwo)
            #expect(try statPath(folder.path("two")).st_ino == inodeOne)

            // A file and a directory in different directories swap too.
            try makeDirectory(folder.path("dir"))
            try makeDirectory(folder.path("dir/sub"))
            try writeFile(folder.path("dir/sub/inside"), "inside")
            try posix("renameat2(one, dir/sub, RENAME_EXCHANGE)") {
                Linux.renameat2(folder.path("one"), folder.path("dir/sub"), Linux.renameExchange)
            }
            #expect(isDirectory(try statPath(folder.path("one"))))
            #expect(try readText(folder.path("one/inside")) == "inside")
            #expect(try readText(folder.path("dir/sub")) == "second")

            expectErrno(ENOENT, "renameat2(x, missing, RENAME_EXCHANGE)") {
                Linux.renameat2(folder.path("two"), folder.path("missing"), Linux.renameExchange)
            }
            #expect(try readText(folder.path("two")) == "first")
            expectErrno(EINVAL, "renameat2(NOREPLACE | EXCHANGE)") {
                Linux.renameat2(
                    folder.path("two"), folder.path("dir/sub"), Linux.renameExchange | Linux.renameNoReplace)
            }
        }
    }
}
