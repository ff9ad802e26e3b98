import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// A synced tree whose folders changed (a `chmod -R`) just before it was removed: every folder's
/// queued change predates the deletes of what is in it, so the uploader meets each folder's
/// delete before its contents' and the container refuses it. The tree must stay deleted on both
/// sides, not come back when the refused deletes give way to the container. In the serialized
/// engine suite.
extension SyncEngineTests {
    /// Two chains of 10: deeper than the uploader's "others first" recursion goes (8); 41
    /// entries, under the mass-delete guard's minimum (50), so the guard stays on.
    @Test func aRemovedTreeOfChangedFoldersStaysDeleted() async throws {
        try await removeTreeOfChangedFolders(chains: 2, depth: 10, guardsDeletes: true)
    }

    /// A chain deeper than any bound on the uploader's recursion (64) stays deleted too.
    @Test func aRemovedChainOf80ChangedFoldersStaysDeleted() async throws {
        try await removeTreeOfChangedFolders(chains: 1, depth: 80, guardsDeletes: false)
    }

    /// Builds `chains` chains of `depth` folders under `top` (a file in each folder), syncs them,
    /// changes every folder outermost first, removes everything innermost first, and expects the
    /// tree gone on both sides and in the container.
    private func removeTreeOfChangedFolders(chains: Int, depth: Int, guardsDeletes: Bool) async throws {
        // Changes wait 0.3 s: the chmods and the removal below are queued before any goes.
        let policy = UploadQueue.Policy(
            quietDelay: 300_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: policy, guardsDeletes: guardsDeletes)
        let top = try pair.a.mkdir("top")
        var folders: [(parent: InodeNumber, name: String, ino: InodeNumber)] = [(.root, "top", top)]
        var files: [(parent: InodeNumber, name: String)] = []
        for chain in 0..<chains {
            var parent = top
            for level in 0..<depth {
                let folder = try pair.a.mkdir("c\(chain)-\(level)", in: parent)
                folders.append((parent, "c\(chain)-\(level)", folder))
                _ = try pair.a.makeFile("x", in: folder, contents: Array("\(chain).\(level)".utf8))
                files.append((folder, "x"))
                parent = folder
            }
        }
        try await eventually("the tree on B") {
            let last = (0..<depth).map { "c\(chains - 1)-\($0)" }.joined(separator: "/")
            return try contents(pair.b, "top/" + last + "/x") == Array("\(chains - 1).\(depth - 1)".utf8)
        }
        try await pair.settle()

        // Outermost first, as `chmod -R` goes; then removed innermost first, as `rm -rf` goes.
        for folder in folders {
            var changes = AttributeChanges()
            changes.mode = 0o750
            _ = try pair.a.fs.setattr(folder.ino, changes, handle: nil)
        }
        for file in files { try pair.a.fs.unlink(parent: file.parent, name: FileName(file.name)) }
        for folder in folders.reversed() { try pair.a.fs.rmdir(parent: folder.parent, name: FileName(folder.name)) }

        try await pair.settle()
        try await eventually("the tree gone from B") { try pair.b.childNames() == [] }
        #expect(try pair.a.childNames() == [], "nothing came back on A")
        #expect(try pair.b.childNames() == [])
        let live = try await pair.container.changes(after: .beginning, limit: 1000).entries.filter {
            !$0.isDeleted && $0.id != .root
        }
        #expect(live.isEmpty, "the container still holds \(live.count) entries")
    }
}
