import Foundation
import Glibc
import TestSupport
import Testing

/// Remote changes of the content or mtime of a regular file whose inode the receiving mount's
/// kernel still has cached (the mount looked the file up before). With the writeback cache the
/// kernel keeps its own size and mtime of a cached regular file and takes neither from the
/// daemon's attributes, so such a change must come as a new inode (doc/SEMANTICS.md, "Inode
/// numbers of remotely edited files"); these tests found the bug when it did not.
extension SyncTwoMountsTest {
    @Test func contentChangesReachAFileTheOtherMountHasSeen() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            for p in [
                Propagation(mounts, from: mounts.a, to: mounts.b, in: "fromA"),
                Propagation(mounts, from: mounts.b, to: mounts.a, in: "fromB"),
            ] {
                let (src, dst) = (p.src, p.dst)
                try p.step(
                    "create a file with content",
                    change: {
                        try makeDirectory(p.source.path(p.dir))
                        try writeFile(src("file.txt"), "hello")
                    }, arrived: { try readText(dst("file.txt")) == "hello" })
                // From here on the destination's kernel has the file's inode cached.
                try p.step(
                    "append", change: { try appendFile(src("file.txt"), bytes(" world")) },
                    arrived: { try readText(dst("file.txt")) == "hello world" })
                try p.step(
                    "overwrite in place",
                    change: {
                        try withFile(src("file.txt"), O_WRONLY) { try pwriteBytes($0, bytes("HELLO"), offset: 0) }
                    }, arrived: { try readText(dst("file.txt")) == "HELLO world" })
                try p.step(
                    "rewrite with O_TRUNC", change: { try writeFile(src("file.txt"), "rewritten") },
                    arrived: { try readText(dst("file.txt")) == "rewritten" })
                try p.step(
                    "truncate down", change: { try posix("truncate") { truncate(src("file.txt"), 4) } },
                    arrived: { try readText(dst("file.txt")) == "rewr" })
                let grown = bytes("rewr") + [UInt8](repeating: 0, count: 4092)
                try p.step(
                    "truncate up", change: { try posix("truncate") { truncate(src("file.txt"), 4096) } },
                    arrived: { try readFile(dst("file.txt")) == grown })
                try p.step(
                    "utimensat with nanoseconds",
                    change: { try setMtime(src("file.txt"), seconds: 1_234_567_890, nanoseconds: 123_456_789) },
                    arrived: { try mtimeOf(dst("file.txt")) == (1_234_567_890, 123_456_789) })
            }
            expectConverged(mounts, "after the content changes")
        }
    }

    @Test func saveByRenameShowsTheNewContentOnTheOtherMount() throws {
        try SyncedMounts.with(uploadDelay: 500, uploadDelayB: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("f.txt"), "version 1\n")
            let first = waitUntil { try readText(b.path("f.txt")) == "version 1\n" }
            try #require(first)
            let version2 = "version 2, saved by writing .f.txt.swp and renaming it over f.txt\n"
            try saveByRename(a.path("f.txt"), version2)
            let arrived = waitUntil { try readText(b.path("f.txt")) == version2 }
            let shown = describeFile(b.path("f.txt"))
            #expect(arrived, "B shows \(shown)")
            expectConverged(mounts, "after the save by rename")
        }
    }

    @Test func theConflictLoserShowsTheWinningVersionWithoutARemount() throws {
        try SyncedMounts.with(uploadDelay: 600_000) { mounts in
            let b = mounts.b
            let (fromA, _) = try editOnBothSides(mounts)
            let arrived = waitUntil { try readText(b.path("notes.txt")) == fromA }
            let shown = describeFile(b.path("notes.txt"))
            #expect(arrived, "B's notes.txt should be A's version; B shows \(shown)")
            expectConverged(mounts, "after both edits were synced")
        }
    }
}

/// "st_size N, content "…"" of a file, for failure messages.
private func describeFile(_ path: String) -> String {
    do {
        let size = try lstatPath(path).st_size
        return "st_size \(size), content \(try readText(path).debugDescription)"
    } catch {
        return "\(error)"
    }
}
