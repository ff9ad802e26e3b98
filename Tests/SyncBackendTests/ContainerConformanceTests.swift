import Testing

@testable import SyncBackend

/// The `Container` contract, checked against every implementation (`ContainerKind`). Chunks and
/// commit rules here; the change feed and waiting in ContainerConformanceFeedTests.swift.
@Suite("Container conformance")
struct ContainerConformanceTests {
    // MARK: Chunks

    @Test(arguments: ContainerKind.allCases)
    func chunksArePutOnceAndReadBackAsStored(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let first = rawChunk("first chunk")
        let second = rawChunk("second chunk")
        #expect(try await container.missingChunks([first.hash, second.hash]) == [first.hash, second.hash])

        try await container.putChunk(first)
        try await container.putChunk(first)  // idempotent
        #expect(try await container.missingChunks([second.hash, first.hash]) == [second.hash])
        #expect(try await container.chunk(first.hash) == first)
        #expect(await protocolError { _ = try await container.chunk(second.hash) } == .chunkNotFound(second.hash))

        // A compressed chunk comes back exactly as stored (byte for byte, still compressed).
        let text = Array(String(repeating: "compressible ", count: 200).utf8)
        let zlib = text.withUnsafeBytes { ChunkCodec.encode($0, level: 6) }
        #expect(zlib.encoding == .zlib && zlib.payload.count < text.count)
        try await container.putChunk(zlib)
        #expect(try await container.chunk(zlib.hash) == zlib)

        let empty = rawChunk([])
        try await container.putChunk(empty)
        #expect(try await container.chunk(empty.hash) == empty)
    }

    @Test(arguments: ContainerKind.allCases)
    func malformedChunksAreRefused(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        var wrongLength = rawChunk("abc")
        wrongLength.plainLength = 4
        #expect(await protocolError { try await container.putChunk(wrongLength) }?.isInvalidRequest == true)
        #expect(try await container.missingChunks([wrongLength.hash]) == [wrongLength.hash])
    }

    // MARK: Commits

    @Test(arguments: ContainerKind.allCases)
    func createUpdateDeleteAndRecreate(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let id = FileID.random()
        #expect(try await container.entry(id) == nil)

        let created = try await container.mustPut(id, base: 0, directoryState("docs"))
        #expect(created.id == id && !created.isDeleted && created.device == "device-a")
        #expect(created.version > 0)
        #expect(try await container.entry(id) == created)

        let renamed = try await container.mustPut(id, base: created.version, directoryState("papers", mode: 0o700))
        #expect(renamed.version > created.version)
        #expect(renamed.state.name == Array("papers".utf8) && renamed.state.mode == 0o700)

        let tombstone = try await container.mustDelete(id, base: renamed.version)
        #expect(tombstone.isDeleted && tombstone.version > renamed.version)
        #expect(tombstone.state == renamed.state)  // a tombstone keeps the last state
        #expect(try await container.entry(id) == tombstone)

        // A put on a tombstone needs the tombstone's version as its base, and brings it back.
        #expect(try await container.put(id, base: 0, directoryState("docs")) == .versionConflict(current: tombstone))
        let recreated = try await container.mustPut(id, base: tombstone.version, directoryState("docs"))
        #expect(!recreated.isDeleted && recreated.version > tombstone.version)
        #expect(try await container.entry(id) == recreated)
    }

    @Test(arguments: ContainerKind.allCases)
    func filesAndSymlinksKeepEverythingThatSyncs(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let chunks = [rawChunk("one"), rawChunk("two"), rawChunk("one")]
        for chunk in chunks { try await container.putChunk(chunk) }
        var state = fileState("notes.txt", chunks: chunks)
        state.xattrs = ["user.a": [], "user.b": Array(repeating: 9, count: 300)]
        let file = try await container.mustPut(.random(), base: 0, state)
        #expect(try await container.entry(file.id)?.state == state)

        let link = try await container.mustPut(.random(), base: 0, symlinkState("link", target: "notes.txt"))
        #expect(try await container.entry(link.id)?.state.symlinkTarget == Array("notes.txt".utf8))
    }

    @Test(arguments: ContainerKind.allCases)
    func aStaleBaseIsAConflictCarryingTheCurrentEntry(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let id = FileID.random()
        let first = try await container.mustPut(id, base: 0, directoryState("a"))
        let second = try await container.mustPut(id, base: first.version, directoryState("b"))

        #expect(
            try await container.put(id, base: first.version, directoryState("c")) == .versionConflict(current: second))
        #expect(try await container.put(id, base: 0, directoryState("c")) == .versionConflict(current: second))
        #expect(try await container.delete(id, base: first.version) == .versionConflict(current: second))
        #expect(try await container.put(.random(), base: 7, directoryState("d")) == .versionConflict(current: nil))
        #expect(try await container.entry(id) == second)
    }

    @Test(arguments: ContainerKind.allCases)
    func aNameIsTakenOnlyByALiveSibling(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let holder = try await container.mustPut(.random(), base: 0, directoryState("x"))
        let other = FileID.random()
        #expect(try await container.put(other, base: 0, fileState("x")) == .nameTaken(by: holder))

        // Another directory, or the holder keeping its own name, is fine.
        let sub = try await container.mustPut(.random(), base: 0, directoryState("sub"))
        try await container.mustPut(other, base: 0, fileState("x", in: sub.id))
        let kept = try await container.mustPut(holder.id, base: holder.version, directoryState("x", mode: 0o700))

        // A tombstone's name is free.
        try await container.mustDelete(holder.id, base: kept.version)
        try await container.mustPut(.random(), base: 0, fileState("x"))
    }

    @Test(arguments: ContainerKind.allCases)
    func theParentMustBeALiveDirectory(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        #expect(try await container.put(.random(), base: 0, fileState("f", in: .random())) == .parentMissing)

        let deleted = try await container.mustPut(.random(), base: 0, directoryState("gone"))
        try await container.mustDelete(deleted.id, base: deleted.version)
        #expect(try await container.put(.random(), base: 0, fileState("f", in: deleted.id)) == .parentMissing)

        let file = try await container.mustPut(.random(), base: 0, fileState("file"))
        #expect(try await container.put(.random(), base: 0, fileState("f", in: file.id)) == .parentMissing)
        let link = try await container.mustPut(.random(), base: 0, symlinkState("link", target: "x"))
        #expect(try await container.put(.random(), base: 0, fileState("f", in: link.id)) == .parentMissing)
    }

    @Test(arguments: ContainerKind.allCases)
    func aDirectoryCannotMoveIntoItself(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let a = try await container.mustPut(.random(), base: 0, directoryState("a"))
        let b = try await container.mustPut(.random(), base: 0, directoryState("b", in: a.id))
        let c = try await container.mustPut(.random(), base: 0, directoryState("c", in: b.id))

        #expect(try await container.put(a.id, base: a.version, directoryState("a", in: c.id)) == .wouldCreateCycle)
        #expect(try await container.put(a.id, base: a.version, directoryState("a", in: a.id)) == .wouldCreateCycle)
        #expect(try await container.entry(a.id) == a)

        // Moving a descendant up is fine.
        let moved = try await container.mustPut(c.id, base: c.version, directoryState("c"))
        #expect(moved.state.parent == .root)
    }

    @Test(arguments: ContainerKind.allCases)
    func aDirectoryWithLiveChildrenCannotBeDeleted(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let directory = try await container.mustPut(.random(), base: 0, directoryState("d"))
        let child = try await container.mustPut(.random(), base: 0, fileState("f", in: directory.id))

        #expect(try await container.delete(directory.id, base: directory.version) == .directoryNotEmpty)
        // Turning it into a file would orphan the child just the same.
        #expect(try await container.put(directory.id, base: directory.version, fileState("d")) == .directoryNotEmpty)

        try await container.mustDelete(child.id, base: child.version)
        try await container.mustDelete(directory.id, base: directory.version)
    }

    @Test(arguments: ContainerKind.allCases)
    func everyChunkOfTheManifestMustBeStored(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let stored = rawChunk("stored")
        let missing = rawChunk("missing")
        try await container.putChunk(stored)
        let state = fileState("f", chunks: [stored, missing, stored, missing])
        let id = FileID.random()

        #expect(try await container.put(id, base: 0, state) == .chunksMissing([missing.hash]))
        #expect(try await container.entry(id) == nil)
        try await container.putChunk(missing)
        try await container.mustPut(id, base: 0, state)
    }

    @Test(arguments: ContainerKind.allCases)
    func theRootAlwaysExists(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let root = try #require(try await container.entry(.root))
        #expect(root.version == 0 && !root.isDeleted && root.state.kind == .directory)
        #expect(root.state.parent == nil && root.state.name.isEmpty)

        #expect(await protocolError { _ = try await container.delete(.root, base: 0) }?.isInvalidRequest == true)
        var withParent = directoryState("")
        withParent.parent = .random()
        #expect(
            await protocolError { _ = try await container.put(.root, base: 0, withParent) }?.isInvalidRequest == true)
        var named = directoryState("root")
        named.parent = nil
        #expect(await protocolError { _ = try await container.put(.root, base: 0, named) }?.isInvalidRequest == true)
        var orphan = directoryState("orphan")
        orphan.parent = nil
        #expect(
            await protocolError { _ = try await container.put(.random(), base: 0, orphan) }?.isInvalidRequest == true)

        var rootState = root.state
        rootState.mode = 0o700
        let committed = try await container.mustPut(.root, base: 0, rootState)
        #expect(committed.version > 0 && committed.state.mode == 0o700)
        #expect(try await container.entry(.root) == committed)
        #expect(try await container.put(.root, base: 0, rootState) == .versionConflict(current: committed))
        #expect(
            await protocolError { _ = try await container.delete(.root, base: committed.version) }?.isInvalidRequest
                == true)
    }

    @Test(arguments: ContainerKind.allCases)
    func malformedRequestsAreInvalid(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        var states: [EntryState] = []
        for name in [[], Array("a/b".utf8), [0x61, 0], Array(repeating: 0x61, count: 256)] as [[UInt8]] {
            var state = fileState("x")
            state.name = name
            states.append(state)
        }
        var badMode = directoryState("m")
        badMode.mode = 0o10000
        var badSize = fileState("s", chunks: [rawChunk("abc")])
        badSize.size = 2
        var directoryWithContent = directoryState("d")
        directoryWithContent.size = 3
        var fileWithTarget = fileState("t")
        fileWithTarget.symlinkTarget = [0x61]
        var symlinkWithoutTarget = symlinkState("l", target: "x")
        symlinkWithoutTarget.symlinkTarget = nil
        states += [badMode, badSize, directoryWithContent, fileWithTarget, symlinkWithoutTarget]
        for state in states {
            let error = await protocolError { _ = try await container.put(.random(), base: 0, state) }
            #expect(error?.isInvalidRequest == true, "\(state)")
        }

        // Deleting what is not live: there is nothing to delete.
        #expect(await protocolError { _ = try await container.delete(.random(), base: 0) }?.isInvalidRequest == true)
        let gone = try await container.mustPut(.random(), base: 0, fileState("gone"))
        let tombstone = try await container.mustDelete(gone.id, base: gone.version)
        let error = await protocolError { _ = try await container.delete(gone.id, base: tombstone.version) }
        #expect(error?.isInvalidRequest == true)
        #expect(try await container.changes(after: .beginning, limit: 10).entries.map(\.version) == [tombstone.version])
    }
}
