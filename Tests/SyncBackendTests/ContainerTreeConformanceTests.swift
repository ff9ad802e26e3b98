import Testing

@testable import SyncBackend

/// The `ContainerTree` contract, checked against every server-side container that answers it:
/// the in-memory reference, the local container and PostgreSQL.
private let treeKinds: [ContainerKind] = [.inMemory, .local, .postgres]

@Suite("Container tree conformance")
struct ContainerTreeConformanceTests {
    @Test(arguments: treeKinds)
    func aChildIsFoundByItsExactName(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        let docs = try await container.mustPut(FileID.random(), base: 0, directoryState("docs"))
        let notes = try await container.mustPut(FileID.random(), base: 0, fileState("notes.txt", in: docs.id))
        let link = try await container.mustPut(FileID.random(), base: 0, symlinkState("link", target: "docs"))

        #expect(try await tree.child(named: Array("docs".utf8), of: .root) == docs)
        #expect(try await tree.child(named: Array("link".utf8), of: .root) == link)
        #expect(try await tree.child(named: Array("notes.txt".utf8), of: docs.id) == notes)
        // Exact bytes: not another case, not a prefix or an extension, not another directory.
        for other in ["Notes.txt", "notes.tx", "notes.txt2", "notes"] {
            #expect(try await tree.child(named: Array(other.utf8), of: docs.id) == nil, "\(other)")
        }
        #expect(try await tree.child(named: Array("notes.txt".utf8), of: .root) == nil)
    }

    @Test(arguments: treeKinds)
    func aTombstoneIsNotAChildAndAReusedNameAnswersTheLiveEntry(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        let first = try await container.mustPut(FileID.random(), base: 0, fileState("report"))
        try await container.mustDelete(first.id, base: first.version)

        #expect(try await tree.child(named: Array("report".utf8), of: .root) == nil)
        #expect(try await tree.children(of: .root, after: nil, limit: 10).isEmpty)

        let second = try await container.mustPut(FileID.random(), base: 0, fileState("report"))
        #expect(try await tree.child(named: Array("report".utf8), of: .root) == second)
        #expect(try await tree.children(of: .root, after: nil, limit: 10) == [second])
    }

    @Test(arguments: treeKinds)
    func nothingIsAChildOfAFileADeletedDirectoryOrAnUnknownID(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        let file = try await container.mustPut(FileID.random(), base: 0, fileState("plain"))
        let gone = try await container.mustPut(FileID.random(), base: 0, directoryState("gone"))
        let inside = try await container.mustPut(FileID.random(), base: 0, fileState("inside", in: gone.id))
        try await container.mustDelete(inside.id, base: inside.version)
        try await container.mustDelete(gone.id, base: gone.version)

        for parent in [file.id, gone.id, FileID.random()] {
            #expect(try await tree.child(named: Array("inside".utf8), of: parent) == nil)
            #expect(try await tree.children(of: parent, after: nil, limit: 10).isEmpty)
        }
    }

    /// A live entry below a tombstone or a file cannot be committed, but a copied (imported)
    /// container may hold one: the parent's own state still decides.
    @Test(arguments: [ContainerKind.local, .postgres])
    func aLiveRowBelowADeletedDirectoryOrAFileIsNoChild(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let importer = try #require(fixture.container as? any ImportableContainer)
        let tree = try #require(fixture.container as? any ContainerTree)
        let (directory, file) = (FileID.random(), FileID.random())
        try await importer.importEntries([
            RemoteEntry(id: directory, version: 1, isDeleted: true, device: "d", state: directoryState("gone")),
            RemoteEntry(id: file, version: 2, isDeleted: false, device: "d", state: fileState("plain")),
            RemoteEntry(
                id: FileID.random(), version: 3, isDeleted: false, device: "d",
                state: fileState("orphan", in: directory)),
            RemoteEntry(
                id: FileID.random(), version: 4, isDeleted: false, device: "d", state: fileState("under", in: file)),
        ])

        #expect(try await tree.child(named: Array("orphan".utf8), of: directory) == nil)
        #expect(try await tree.children(of: directory, after: nil, limit: 10).isEmpty)
        #expect(try await tree.child(named: Array("under".utf8), of: file) == nil)
        #expect(try await tree.children(of: file, after: nil, limit: 10).isEmpty)
        #expect(try await tree.children(of: .root, after: nil, limit: 10).map(\.id) == [file])
    }

    @Test(arguments: treeKinds)
    func childrenArePagedInUnsignedByteOrderOfTheirNames(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        let folder = try await container.mustPut(FileID.random(), base: 0, directoryState("folder"))
        // Sorted as unsigned bytes: uppercase before lowercase, a prefix before its extensions,
        // bytes >= 0x80 (UTF-8 or not) after ASCII.
        let sorted: [[UInt8]] = [
            Array("B".utf8), Array("Z".utf8), Array("a".utf8), Array("ab".utf8), Array("abc".utf8), Array("b".utf8),
            [0x7F], [0x80], Array("é".utf8), [0xFF], [0xFF, 0x01],
        ]
        // Committed in an order unlike the sorted one (reversed, then the halves swapped).
        let reversed = Array(sorted.reversed())
        for name in reversed[5...] + reversed[..<5] {
            try await container.mustPut(FileID.random(), base: 0, namedFileState(name, in: folder.id))
        }
        try await container.mustPut(FileID.random(), base: 0, fileState("elsewhere"))

        let all = try await tree.children(of: folder.id, after: nil, limit: 100)
        #expect(all.map(\.state.name) == sorted)
        #expect(all.allSatisfy { !$0.isDeleted && $0.state.parent == folder.id })

        // Pages of 3 continue after the last name of the previous page and end with an empty
        // one (read at most one page per name more, so a page that repeats a name cannot loop).
        var paged: [[UInt8]] = []
        var after: [UInt8]?
        var ended = false
        for _ in 0...sorted.count {
            let page = try await tree.children(of: folder.id, after: after, limit: 3)
            #expect(page.count <= 3)
            guard let last = page.last else {
                ended = true
                break
            }
            paged += page.map(\.state.name)
            after = last.state.name
        }
        #expect(ended)
        #expect(paged == sorted)
    }

    @Test(arguments: treeKinds)
    func afterExcludesTheEqualNameAndNeedNotBeAName(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        for name in ["a", "ab", "b"] { try await container.mustPut(FileID.random(), base: 0, fileState(name)) }

        func names(after: [UInt8]?, limit: Int = 10) async throws -> [String] {
            try await tree.children(of: .root, after: after, limit: limit).map {
                String(decoding: $0.state.name, as: UTF8.self)
            }
        }
        #expect(try await names(after: nil) == ["a", "ab", "b"])
        #expect(try await names(after: Array("a".utf8)) == ["ab", "b"])
        #expect(try await names(after: Array("ab".utf8)) == ["b"])
        #expect(try await names(after: Array("aa".utf8)) == ["ab", "b"])
        #expect(try await names(after: []) == ["a", "ab", "b"])
        #expect(try await names(after: Array("a".utf8) + [0]) == ["ab", "b"])
        #expect(try await names(after: Array("b".utf8)).isEmpty)
        #expect(try await names(after: [0xFF]).isEmpty)
        #expect(try await names(after: nil, limit: 1) == ["a"])
    }

    @Test(arguments: treeKinds)
    func limitsOutsideThePageSizesAreRefused(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        let file = try await container.mustPut(FileID.random(), base: 0, fileState("one"))
        for limit in [0, -1, TreePage.limits.upperBound + 1] {
            for parent in [FileID.root, FileID.random()] {
                #expect(
                    await protocolError { _ = try await tree.children(of: parent, after: nil, limit: limit) }?
                        .isInvalidRequest == true, "limit \(limit)")
            }
        }
        #expect(try await tree.children(of: .root, after: nil, limit: TreePage.limits.upperBound) == [file])
        #expect(try await tree.children(of: .root, after: nil, limit: TreePage.limits.lowerBound) == [file])
    }

    @Test(arguments: treeKinds)
    func theRootHasChildrenBeforeAndAfterItsFirstCommit(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        #expect(try await tree.children(of: .root, after: nil, limit: 10).isEmpty)
        let file = try await container.mustPut(FileID.random(), base: 0, fileState("early"))
        #expect(try await tree.child(named: Array("early".utf8), of: .root) == file)
        #expect(try await tree.children(of: .root, after: nil, limit: 10) == [file])

        let rootState = EntryState(parent: nil, name: [], kind: .directory, mode: 0o700, mtime: 5_000, size: 0)
        try await container.mustPut(.root, base: 0, rootState)
        #expect(try await tree.child(named: Array("early".utf8), of: .root) == file)
        // The root's own row (no parent, the empty name) is nobody's child.
        #expect(try await tree.children(of: .root, after: nil, limit: 10) == [file])
        #expect(try await tree.child(named: [], of: .root) == nil)
    }

    @Test(arguments: treeKinds)
    func aMovedEntryIsListedOnlyUnderItsNewParentAndName(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tree = try #require(container as? any ContainerTree)
        let from = try await container.mustPut(FileID.random(), base: 0, directoryState("from"))
        let to = try await container.mustPut(FileID.random(), base: 0, directoryState("to"))
        let file = try await container.mustPut(FileID.random(), base: 0, fileState("draft", in: from.id))

        let moved = try await container.mustPut(file.id, base: file.version, fileState("final", in: to.id))
        #expect(try await tree.children(of: from.id, after: nil, limit: 10).isEmpty)
        #expect(try await tree.child(named: Array("draft".utf8), of: from.id) == nil)
        #expect(try await tree.child(named: Array("final".utf8), of: from.id) == nil)
        #expect(try await tree.child(named: Array("draft".utf8), of: to.id) == nil)
        #expect(try await tree.child(named: Array("final".utf8), of: to.id) == moved)
        #expect(try await tree.children(of: to.id, after: nil, limit: 10) == [moved])
    }
}

/// A file state whose name is `name`'s raw bytes (not necessarily UTF-8).
private func namedFileState(_ name: [UInt8], in parent: FileID) -> EntryState {
    var state = fileState("placeholder", in: parent)
    state.name = name
    return state
}
