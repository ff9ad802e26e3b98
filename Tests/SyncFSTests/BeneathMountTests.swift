import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// `BeneathMount` (the inotify echo's calls) on a plain directory standing in for the mount
/// point, with a sentinel directory beside it: whatever the tree below the root holds —
/// symlinks where directories are expected, symlinks where files are expected — no call
/// changes anything outside the root. (Through a real mount and a hostile container:
/// `HostileContainerMountTest` in the mount tests.)
@Suite("BeneathMount: the echo's calls stay below the mount root")
struct BeneathMountTests {
    /// TMP/root (the "mount point") and TMP/sentinel (outside it) with a file, 0644.
    struct Layout {
        let top: String
        var root: String { top + "/root" }
        var sentinel: String { top + "/sentinel" }
        var sentinelFile: String { sentinel + "/secret" }

        init() throws {
            top = try makeTemporaryDirectory("beneath")
            try FileManager.default.createDirectory(atPath: top + "/root", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: top + "/sentinel", withIntermediateDirectories: true)
            try Data("secret".utf8).write(to: URL(fileURLWithPath: top + "/sentinel/secret"))
            chmod(top + "/sentinel/secret", 0o644)
        }

        /// Names, kinds, modes, sizes and contents below the sentinel, for before/after checks.
        func sentinelSnapshot() throws -> [String] {
            var lines: [String] = []
            for name in try FileManager.default.contentsOfDirectory(atPath: sentinel).sorted() {
                var status = stat()
                lstat(sentinel + "/" + name, &status)
                let content = (try? Data(contentsOf: URL(fileURLWithPath: sentinel + "/" + name))) ?? Data()
                lines.append("\(name) \(String(status.st_mode, radix: 8)) \(status.st_size) \(content.hashValue)")
            }
            return lines
        }

        func remove() { try? FileManager.default.removeItem(atPath: top) }
    }

    private func location(_ directories: [String], _ name: String?) -> EchoLocation? {
        EchoLocation(directories: directories.map { FileName($0) }, name: name.map { FileName($0) })
    }

    @Test func locationsRefuseNamesThatAreNotOnePathComponent() {
        #expect(location([], "..") == nil)
        #expect(location([".."], "x") == nil)
        #expect(location(["a", "."], "x") == nil)
        #expect(location([], "a/b") == nil)
        #expect(location([], "") == nil)
        #expect(location(["a"], "b") != nil)
        #expect(location([], nil) != nil, "the root itself")
    }

    @Test func aSymlinkWhereADirectoryIsExpectedIsNeverFollowed() throws {
        let layout = try Layout()
        defer { layout.remove() }
        symlink(layout.sentinel, layout.root + "/a")
        let before = try layout.sentinelSnapshot()
        let calls = BeneathMount(mountpoint: layout.root)
        let inside = try #require(location(["a"], "planted"))
        #expect(calls.create(inside, kind: .file, target: nil) == ENOTDIR)
        #expect(calls.create(inside, kind: .symlink, target: Array("/etc/shadow".utf8)) == ENOTDIR)
        #expect(calls.create(inside, kind: .directory, target: nil) == ENOTDIR)
        let secret = try #require(location(["a"], "secret"))
        #expect(calls.remove(secret, isDirectory: false) == ENOTDIR)
        #expect(calls.touchContent(secret, size: 0) == ENOTDIR)
        #expect(calls.touchAttributes(secret, kind: .file, mode: 0o6777, uid: 0) == ENOTDIR)
        #expect(calls.move(secret, to: try #require(location([], "stolen"))) == ENOTDIR)
        #expect(try layout.sentinelSnapshot() == before)
        #expect(!FileManager.default.fileExists(atPath: layout.root + "/stolen"))
    }

    @Test func aSymlinkWhereAFileIsExpectedIsNeverFollowed() throws {
        let layout = try Layout()
        defer { layout.remove() }
        symlink(layout.sentinelFile, layout.root + "/link")
        let before = try layout.sentinelSnapshot()
        let calls = BeneathMount(mountpoint: layout.root)
        let link = try #require(location([], "link"))
        #expect(calls.touchContent(link, size: 0) == ELOOP, "open(O_NOFOLLOW) refuses the link")
        #expect(calls.touchAttributes(link, kind: .file, mode: 0o6777, uid: 0) == ELOOP)
        #expect(calls.touchAttributes(link, kind: .directory, mode: 0o777, uid: 0) == ELOOP)
        #expect(try layout.sentinelSnapshot() == before, "the link's target is untouched")
        // Removing the link removes the link, not its target.
        #expect(calls.remove(link, isDirectory: false) == 0)
        #expect(try layout.sentinelSnapshot() == before)
    }

    @Test func callsBelowTheRootDoWhatTheySay() throws {
        let layout = try Layout()
        defer { layout.remove() }
        let calls = BeneathMount(mountpoint: layout.root)
        #expect(calls.create(try #require(location([], "d")), kind: .directory, target: nil) == 0)
        let file = try #require(location(["d"], "f"))
        #expect(calls.create(file, kind: .file, target: nil) == 0)
        try Data("hello".utf8).write(to: URL(fileURLWithPath: layout.root + "/d/f"))
        #expect(calls.touchContent(file, size: 5) == 0)
        #expect(try String(contentsOfFile: layout.root + "/d/f", encoding: .utf8) == "hello", "same size: unchanged")
        #expect(calls.touchAttributes(file, kind: .file, mode: 0o640, uid: 0) == 0)
        var status = stat()
        stat(layout.root + "/d/f", &status)
        #expect(status.st_mode & 0o7777 == 0o640)
        #expect(calls.touchAttributes(try #require(location([], nil)), kind: .directory, mode: 0o750, uid: 0) == 0)
        stat(layout.root, &status)
        #expect(status.st_mode & 0o7777 == 0o750, "the root itself")
        let target = Array("../../sentinel/secret".utf8)
        #expect(calls.create(try #require(location(["d"], "l")), kind: .symlink, target: target) == 0)
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: layout.root + "/d/l") == "../../sentinel/secret",
            "a symlink's target is data, stored as given")
        #expect(calls.move(file, to: try #require(location([], "g"))) == 0)
        #expect(FileManager.default.fileExists(atPath: layout.root + "/g"))
        #expect(calls.remove(try #require(location([], "g")), isDirectory: false) == 0)
        #expect(calls.remove(try #require(location(["d"], "l")), isDirectory: false) == 0)
        #expect(calls.remove(try #require(location([], "d")), isDirectory: true) == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.root).isEmpty)
    }

    @Test func anotherFilesystemMountedBelowTheRootIsNotEntered() throws {
        // /proc stands in for a mount inside the folder: a bind would need privileges, a
        // symlink is refused earlier, so the check is shown with a root whose child is /proc.
        let calls = BeneathMount(mountpoint: "/")
        #expect(calls.create(try #require(location(["proc"], "x")), kind: .file, target: nil) == EXDEV)
    }
}
