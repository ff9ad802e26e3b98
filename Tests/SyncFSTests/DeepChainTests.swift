import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// Uploads nest: a change whose parent is not in the container yet uploads the parent first, and
/// so on up a chain of new folders. How deep the chain is must never decide an outcome people
/// see: a name freed by this mount's own queued change is taken once that change went, at any
/// depth — never a conflict copy. In the serialized engine suite.
extension SyncEngineTests {
    /// A churn on one mount made a conflict copy of a top folder of its own: `s2` was renamed
    /// away, a new `s2` got a chain of a dozen new folders, and a file whose change was queued
    /// first moved to the bottom of it. The upload of the file went up the chain to the new
    /// `s2`, thirteen uploads deep; there the old `s2`'s queued rename, which frees the name, was
    /// not let go first (the nesting was spent), and the new folder became
    /// `s2 (conflict from …)` on every machine.
    @Test func aNameFreedByOurOwnRenameIsTakenAtTheBottomOfADeepChain() async throws {
        let pair = try SyncedPair()
        let oldFolder = try pair.a.mkdir("s2")
        let file = try pair.a.makeFile("f", in: oldFolder, contents: bytes("x"))
        try await eventually("s2/f on B") { try contents(pair.b, "s2/f") == bytes("x") }
        try await pair.settle()

        // Queued in this order before any is uploaded: the file's change, the old folder's
        // rename, the new folder and its chain, the file's move to the bottom of the chain.
        var path = "s2"
        try pair.withEngineAStopped {
            var changes = AttributeChanges()
            changes.mode = 0o600
            _ = try pair.a.fs.setattr(file, changes, handle: nil)
            try pair.a.fs.rename(
                parent: .root, name: FileName("s2"), newParent: .root, newName: FileName("old"), flags: [])
            var bottom = try pair.a.mkdir("s2")
            for level in 0..<12 {
                bottom = try pair.a.mkdir("c\(level)", in: bottom)
                path += "/c\(level)"
            }
            try pair.a.fs.rename(
                parent: oldFolder, name: FileName("f"), newParent: bottom, newName: FileName("f"), flags: [])
            usleep(50_000)  // every quiet delay over: the oldest change goes first
        }

        try await eventually("the file at the bottom of the new s2 on B") {
            try contents(pair.b, path + "/f") == bytes("x")
        }
        try await pair.settle()
        #expect(try pair.a.childNames() == ["old", "s2"], "no conflict copy on A")
        #expect(try pair.b.childNames() == ["old", "s2"], "no conflict copy on B")
    }
}
