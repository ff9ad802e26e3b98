import Foundation
import Glibc
import SyncBackend
import Testing

@testable import SyncFS

/// A synced tree whose folders changed (a `chmod -R`) just before it was removed: every folder's
/// queued change predates the deletes of what is in it, so the uploader meets each folder's
/// delete before its contents' and the container refuses it. The tree must stay deleted on both
/// sides, not come back when the refused deletes give way to the container. In the serialized
/// engine suite.
extension SyncEngineTests {
    @Test func aRemovedTreeOfChangedFoldersStaysDeleted() async throws {
        // Changes wait 0.3 s: the chmods and the removal below are queued before any goes.
        let policy = UploadQueue.Policy(
            quietDelay: 300_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: policy)
        let top = try pair.a.mkdir("top")
        var folders: [(parent: InodeNumber, name: String, ino: InodeNumber)] = [(.root, "top", top)]
        var files: [(parent: InodeNumber, name: String)] = []
        // Two chains of 10 folders, a file in each: deeper than the uploader's "others first"
        // recursion goes (8), and 41 entries, under the mass-delete guard's minimum (50).
        for chain in 0..<2 {
            var parent = top
            for depth in 0..<10 {
                let folder = try pair.a.mkdir("c\(chain)-\(depth)", in: parent)
                folders.append((parent, "c\(chain)-\(depth)", folder))
                _ = try pair.a.makeFile("x", in: folder, contents: Array("\(chain).\(depth)".utf8))
                files.append((folder, "x"))
                parent = folder
            }
        }
        try await pair.eventually("the tree on B") {
            try contents(pair.b, "top/" + (0..<10).map { "c1-\($0)" }.joined(separator: "/") + "/x")
                == Array("1.9".utf8)
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
        try await pair.eventually("the tree gone from B") { try pair.b.childNames() == [] }
        #expect(try pair.a.childNames() == [], "nothing came back on A")
        #expect(try pair.b.childNames() == [])
        let live = try await pair.container.changes(after: .beginning, limit: 1000).entries.filter {
            !$0.isDeleted && $0.id != .root
        }
        #expect(live.isEmpty, "the container still holds \(live.count) entries")
    }
}
