import Testing

@testable import SyncBackend

/// The `Container` contract, continued: `treeDigest` (doc/PROTOCOL.md, "The tree digest").
extension ContainerConformanceTests {
    @Test(arguments: ContainerKind.allCases)
    func theTreeDigestCoversTheLiveEntriesAtTheEndOfTheFeed(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let empty = try await container.treeDigest()
        // A sealed container's feed starts after its genesis: the cursor is not the beginning.
        let none = TreeDigest(versions: [(FileID, EntryVersion)](), cursor: kind.isSealed ? empty.cursor : .beginning)
        #expect(empty == none)
        #expect(empty.entries == 0 && empty.isWellFormed)

        let a = try await container.mustPut(.random(), base: 0, directoryState("a"))
        let b = try await container.mustPut(.random(), base: 0, fileState("b", in: a.id))
        let c = try await container.mustPut(.random(), base: 0, fileState("c"))
        let a2 = try await container.mustPut(a.id, base: a.version, directoryState("a2"))
        _ = try await container.mustDelete(c.id, base: c.version)

        let digest = try await container.treeDigest()
        let cursor = try await container.currentCursor()
        // The live entries at their newest versions (not the deleted one, not the root), at the
        // cursor of the feed's end.
        #expect(digest == TreeDigest(versions: [(a.id, a2.version), (b.id, b.version)], cursor: cursor))
        #expect(digest.entries == 2 && digest.isWellFormed)
        // The order of the pairs does not matter; another version, a missing or an extra entry does.
        #expect(TreeDigest(versions: [(b.id, b.version), (a.id, a2.version)], cursor: cursor).digest == digest.digest)
        #expect(TreeDigest(versions: [(a.id, a.version), (b.id, b.version)], cursor: cursor).digest != digest.digest)
        #expect(TreeDigest(versions: [(a.id, a2.version)], cursor: cursor).digest != digest.digest)
        #expect(
            TreeDigest(versions: [(a.id, a2.version), (b.id, b.version), (c.id, c.version)], cursor: cursor).digest
                != digest.digest)
    }
}
