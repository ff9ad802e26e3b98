import SyncBackend
import Testing

@testable import SyncSealed

/// The tree rules a reader checks after every read, since the server cannot.
@Suite("The sealed tree's rules")
struct SealedTreeTests {
    static func entry(
        _ id: FileID, _ name: String, in parent: FileID = .root, kind: NodeKind = .file, version: EntryVersion = 1,
        deleted: Bool = false
    ) -> RemoteEntry {
        RemoteEntry(
            id: id, version: version, isDeleted: deleted, device: "d",
            state: EntryState(parent: parent, name: Array(name.utf8), kind: kind, mode: 0o755, mtime: 0, size: 0))
    }

    @Test func aSoundTreeHasNoProblem() {
        var tree = SealedTree()
        let folder = FileID.random()
        let file = FileID.random()
        tree.set(Self.entry(folder, "docs", kind: .directory))
        tree.set(Self.entry(file, "a", in: folder))
        #expect(tree.problem(around: [folder, file]) == nil)
        #expect(tree.liveChild(of: folder, named: Array("a".utf8))?.id == file)
        tree.set(Self.entry(file, "b", in: .root, version: 2))  // moved out
        #expect(tree.liveChild(of: folder, named: Array("a".utf8)) == nil)
        #expect(!tree.hasLiveChildren(folder))
        #expect(tree.problem(around: [file]) == nil)
    }

    @Test func everyBrokenRuleIsFound() {
        let folder = FileID.random()
        let inner = FileID.random()
        var orphan = SealedTree()
        orphan.set(Self.entry(inner, "a", in: folder))
        #expect(orphan.problem(around: [inner]) != nil)

        var twins = SealedTree()
        twins.set(Self.entry(.random(), "same"))
        let second = FileID.random()
        twins.set(Self.entry(second, "same"))
        #expect(twins.problem(around: [second]) != nil)

        var deletedParent = SealedTree()
        deletedParent.set(Self.entry(folder, "docs", kind: .directory, deleted: true))
        deletedParent.set(Self.entry(inner, "a", in: folder))
        #expect(deletedParent.problem(around: [folder]) != nil)
        #expect(deletedParent.problem(around: [inner]) != nil)

        var cycle = SealedTree()
        cycle.set(Self.entry(folder, "x", in: inner, kind: .directory))
        cycle.set(Self.entry(inner, "y", in: folder, kind: .directory))
        #expect(cycle.problem(around: [folder]) != nil)

        var fileWithChildren = SealedTree()
        fileWithChildren.set(Self.entry(folder, "f"))
        fileWithChildren.set(Self.entry(inner, "a", in: folder))
        #expect(fileWithChildren.problem(around: [folder, inner]) != nil)
    }

    @Test func aBatchSeesItsEarlierChanges() throws {
        var tree = SealedTree()
        let folder = FileID.random()
        tree.set(Self.entry(folder, "docs", kind: .directory))
        var lookup = PlannedLookup(tree: tree)
        let file = FileID.random()
        lookup.record(Self.entry(file, "new", in: folder, version: 2))
        #expect(lookup.liveChild(of: folder, named: Array("new".utf8))?.id == file)
        #expect(lookup.hasLiveChildren(folder))
        // Deleting the folder is refused while the batch put a file in it.
        let request = CommitRequest(id: folder, baseVersion: 1, change: .delete, device: "d")
        #expect(try CommitRules.decide(request, in: lookup) == .refuse(.directoryNotEmpty))
        lookup.record(Self.entry(file, "new", in: folder, version: 3, deleted: true))
        #expect(!lookup.hasLiveChildren(folder))
        #expect(try CommitRules.decide(request, in: lookup) != .refuse(.directoryNotEmpty))
    }
}
