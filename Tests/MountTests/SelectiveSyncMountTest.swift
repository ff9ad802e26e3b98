import Foundation
import Glibc
import TestSupport
import Testing

/// Selective sync on real mounts (doc/SEMANTICS.md, "Selective sync"): `exclude` takes a folder
/// off one mount (gone from its listing, its cached content freed, the container and the other
/// mount untouched), the other mount's changes below it are not shown, `include` brings it back
/// at once with the latest content, and the exclusion survives a remount; a local entry at the
/// excluded name becomes a selective sync conflict copy; a remote rename of the excluded folder
/// and an entry moved into it by the other mount behave as the rules say. Each on two mounts of a
/// local container and through `serve`.
@Suite(.serialized)
struct SelectiveSyncMountTest {
    /// `status --json`'s selective sync field.
    struct Excluded: Decodable {
        var excluded: [String]?
        var cachedBytes: Int64?
    }

    /// A makes `big/one.txt` and `big/sub/two.txt` plus `top.txt`; B has read them all.
    private func sharedTree(_ mounts: SyncedMounts) throws {
        let (a, b) = (mounts.a, mounts.b)
        try makeDirectory(a.path("big"))
        try makeDirectory(a.path("big/sub"))
        try writeFile(a.path("big/one.txt"), "one")
        try writeFile(a.path("big/sub/two.txt"), String(repeating: "2", count: 10_000))
        try writeFile(a.path("top.txt"), "top")
        try #require(a.expectSync())
        try #require(
            waitUntil(timeout: 30) {
                try readText(b.path("big/one.txt")) == "one" && readText(b.path("top.txt")) == "top"
            },
            "\(mounts.logs())")
    }

    /// B writes `name` at its root after its other changes; once A shows it, A has applied them
    /// (the feed is in order).
    private func marker(_ mounts: SyncedMounts, _ name: String) throws {
        try writeFile(mounts.b.path(name), name)
        #expect(mounts.b.expectSync())
        try #require(waitUntil(timeout: 30) { pathExists(mounts.a.path(name)) }, "\(mounts.logs())")
    }

    @Test(arguments: [false, true]) func excludeHidesAFolderHereOnlyAndIncludeBringsItBackAtOnce(overServer: Bool)
        throws
    {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try sharedTree(mounts)
            let before: Excluded = try a.statusJSON(of: a.root)
            // An open file below: refused, try again later (75), nothing changed.
            let open = try openFile(a.path("big/one.txt"), O_RDONLY)
            let busy = try a.expectCommand(["exclude", a.root, "big"], status: 75)
            close(open)
            #expect(busy.stderr.contains("1 open below (EBUSY)"), "\(busy)")
            #expect(try listDirectory(a.root).sorted() == ["big", "top.txt"])
            let excluded = try a.expectCommand(["exclude", a.root, "big"])
            #expect(excluded.stdout.contains("excluded big from \(a.root): 2 files, "), "\(excluded)")
            #expect(try listDirectory(a.root).sorted() == ["top.txt"])
            #expect(!pathExists(a.path("big")) && !pathExists(a.path("big/one.txt")))
            let after: Excluded = try a.statusJSON(of: a.root)
            #expect(after.excluded == ["big"])
            #expect(
                (before.cachedBytes ?? 0) - (after.cachedBytes ?? 0) == 10_003, "A's cache no longer holds it")
            #expect(try a.expectCommand(["status", a.root]).stdout.contains("excluded: big"))
            // B and the container keep it; B changes below it.
            #expect(try readText(b.path("big/one.txt")) == "one")
            try writeFile(b.path("big/one.txt"), "one, changed by B")
            try writeFile(b.path("big/three.txt"), "three")
            try marker(mounts, "marker-1")
            #expect(try listDirectory(a.root).sorted() == ["marker-1", "top.txt"], "A does not show it")
            let hidden: Excluded = try a.statusJSON(of: a.root)
            // At most the marker's 8 bytes came (B's 22 bytes below the folder did not).
            #expect(
                (hidden.cachedBytes ?? 0) - (after.cachedBytes ?? 0) <= 8, "nothing below it was downloaded")
            // include: at once, as placeholders; reads download B's latest.
            try a.expectCommand(["include", a.root, "big"])
            #expect(try listDirectory(a.path("big")).sorted() == ["one.txt", "sub", "three.txt"])
            #expect(try readText(a.path("big/one.txt")) == "one, changed by B")
            #expect(try readText(a.path("big/three.txt")) == "three")
            #expect((try a.statusJSON(of: a.root) as Excluded).excluded == [])
            // The exclusion survives a remount.
            try a.expectCommand(["exclude", a.root, "big"])
            try a.unmount()
            try a.remount()
            #expect(try listDirectory(a.root).sorted() == ["marker-1", "top.txt"])
            #expect((try a.statusJSON(of: a.root) as Excluded).excluded == ["big"])
            #expect(try readText(b.path("big/sub/two.txt")).count == 10_000, "B still has it all")
        }
    }

    @Test(arguments: [false, true]) func aLocalFolderAtTheExcludedNameBecomesASelectiveSyncConflictCopy(
        overServer: Bool
    ) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try sharedTree(mounts)
            try a.expectCommand(["exclude", a.root, "big"])
            try makeDirectory(a.path("big"))
            try writeFile(a.path("big/mine.txt"), "mine")
            #expect(a.expectSync())
            var copy = ""
            #expect(
                waitUntil(timeout: 30) {
                    copy = try listDirectory(a.root).first { $0.hasPrefix("big (conflict from ") } ?? ""
                    return !copy.isEmpty
                }, "\(mounts.logs())")
            let note = String(decoding: (try? getXattr(a.path(copy), "user.syncfs.conflict")) ?? [], as: UTF8.self)
            #expect(note.contains("selective sync conflict"), "\(note)")
            #expect(try readText(a.path(copy + "/mine.txt")) == "mine")
            // Nothing is lost: B has both, the excluded folder untouched.
            #expect(waitUntil(timeout: 30) { pathExists(b.path(copy + "/mine.txt")) }, "\(mounts.logs())")
            #expect(try readText(b.path("big/one.txt")) == "one")
            #expect(try listDirectory(b.path("big")).sorted() == ["one.txt", "sub"])
            try a.expectCommand(["include", a.root, "big"])
            #expect(try listDirectory(a.root).sorted() == ["big", copy, "top.txt"].sorted())
            #expect(try readText(a.path("big/one.txt")) == "one")
        }
    }

    /// Hostile and surprising input: the other mount renames the excluded folder and moves an
    /// entry into it and one out of it; bad requests exit 64/65 and change nothing.
    @Test(arguments: [false, true]) func remoteRenamesAndMovesAroundTheExcludedFolder(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try sharedTree(mounts)
            try a.expectCommand(["exclude", a.root, "big"])
            #expect(rename(b.path("big"), b.path("renamed")) == 0)
            #expect(rename(b.path("top.txt"), b.path("renamed/top.txt")) == 0)
            try marker(mounts, "marker-1")
            #expect(try listDirectory(a.root).sorted() == ["marker-1"], "moved into it: gone here")
            #expect((try a.statusJSON(of: a.root) as Excluded).excluded == ["renamed"], "followed by its ID")
            #expect(try readText(b.path("renamed/top.txt")) == "top", "nothing deleted")
            #expect(rename(b.path("renamed/one.txt"), b.path("out.txt")) == 0)
            try marker(mounts, "marker-2")
            #expect(try readText(a.path("out.txt")) == "one", "moved out of it: here again")
            // Bad requests.
            try a.expectCommand(["exclude", a.root, ""], status: 65)
            try a.expectCommand(["exclude", a.root, "out.txt"], status: 65)
            try a.expectCommand(["exclude", a.root, "missing"], status: 65)
            try a.expectCommand(["include", a.root, "big"], status: 65)
            try a.expectCommand(["exclude", a.root], status: 64)
            #expect((try a.statusJSON(of: a.root) as Excluded).excluded == ["renamed"])
            // A remote delete of the excluded folder ends the exclusion.
            try a.expectCommand(["include", a.root, "renamed"])
            #expect(try readText(a.path("renamed/top.txt")) == "top")
            try a.expectCommand(["exclude", a.root, "renamed"])
            #expect(rename(b.path("renamed/top.txt"), b.path("top.txt")) == 0)
            #expect(unlink(b.path("renamed/sub/two.txt")) == 0 && rmdir(b.path("renamed/sub")) == 0)
            #expect(rmdir(b.path("renamed")) == 0)
            try marker(mounts, "marker-3")
            #expect((try a.statusJSON(of: a.root) as Excluded).excluded == [])
            #expect(try readText(a.path("top.txt")) == "top")
        }
    }
}
