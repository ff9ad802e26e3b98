import Foundation
import Glibc
import TestSupport
import Testing

/// Many small files at once (an untar), uploaded in batches: after `syncfs-mount sync` returns,
/// a mount of the same container made afterwards holds the very same tree, byte for byte, on a
/// local container and through `serve`.
@Suite(.serialized)
struct UntarSyncMountTest {
    @Test(arguments: [false, true]) func anUntarredTreeIsWholeOnAFreshMountAfterSync(overServer: Bool) throws {
        let scratch = try makeTemporaryDirectory("syncfs-untar")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let source = scratch + "/tree"
        let entries = try Self.generateTree(at: source, folders: 60, files: 3000, links: 60)
        let tarball = scratch + "/tree.tar"
        let packed = ModelProcess.run(["tar", "--format=posix", "--xattrs", "-cf", tarball, "-C", scratch, "tree"])
        try #require(packed.ok, "tar c: \(packed)")

        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let unpacked = ModelProcess.run(
                ["tar", "--xattrs", "--xattrs-include=user.*", "-xpf", tarball, "-C", mounts.a.root], timeout: 600)
            try #require(unpacked.ok, "tar x: \(unpacked)")
            try #require(mounts.a.expectSync(timeout: 600))

            var location = mounts.containerPath
            var access: [String] = []
            if let server = mounts.server {
                location = server.url("box")
                access = ["--token-file", try server.createToken(container: "box")]
            }
            let fresh = try TestFolder.make(.mount, sharedContainer: location, mountArguments: access)
            defer { fresh.tearDown() }
            let expected = SyncedTree.snapshot(source)
            #expect(expected.entries.count == entries, "the generated tree: \(expected.problems)")
            let onA = SyncedTree.snapshot(mounts.a.path("tree"))
            let onFresh = SyncedTree.snapshot(fresh.path("tree"))
            let differences =
                expected.differences(from: onA, labels: ("source", "A"))
                + onA.differences(from: onFresh, labels: ("A", "fresh mount"))
            #expect(differences.isEmpty, "\(differences.prefix(20).joined(separator: "\n"))\n\(mounts.logs())")
        }
    }

    /// Writes `folders` folders (some nested), `files` small files (0 to 8 KiB, some with a user
    /// xattr) and `links` symlinks below `root`; returns the number of entries, `root` included.
    private static func generateTree(at root: String, folders: Int, files: Int, links: Int) throws -> Int {
        try makeDirectory(root)
        var rng = SeededGenerator(seed: 0x38)
        var directories = [root]
        for index in 0..<folders {
            let path = directories[Int(rng.next() % UInt64(directories.count))] + "/folder-\(index)"
            try makeDirectory(path)
            directories.append(path)
        }
        for index in 0..<files {
            let path = directories[Int(rng.next() % UInt64(directories.count))] + "/file-\(index).dat"
            let size = Int(rng.next() % 8193)
            try writeFile(path, (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            if index % 10 == 0 {
                try setXattr(path, "user.tag", Array("tag \(index)".utf8))
            }
        }
        for index in 0..<links {
            let path = directories[Int(rng.next() % UInt64(directories.count))] + "/link-\(index)"
            try #require(symlink("target-\(index)", path) == 0, "symlink \(path)")
        }
        return 1 + folders + files + links
    }
}
