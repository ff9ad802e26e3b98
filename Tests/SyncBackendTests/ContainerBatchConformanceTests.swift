import Testing

@testable import SyncBackend

/// `Container.commit(batch:)` and `putChunks`, checked against every container that implements
/// them (`ContainerKind.batching`): the same answers as single commits, in order, all or nothing.
@Suite("Container conformance: batches")
struct ContainerBatchConformanceTests {
    @Test(arguments: ContainerKind.batching)
    func anEmptyBatchAnswersNothingAndChangesNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        try await container.mustPut(.random(), base: 0, directoryState("before"))
        let cursor = try await container.currentCursor()
        #expect(try await container.commit(batch: []) == [])
        try await container.putChunks([])
        #expect(try await container.changes(after: cursor, limit: 10).entries.isEmpty)
    }

    /// One script of changes, committed one by one to one fresh container and as one batch to
    /// another: every answer, and the feed after it, are the same.
    @Test(arguments: ContainerKind.batching)
    func eachChangeIsAnsweredAsASingleCommitWouldBe(kind: ContainerKind) async throws {
        let singly = try await ContainerFixture.make(kind)
        defer { singly.remove() }
        let batched = try await ContainerFixture.make(kind)
        defer { batched.remove() }
        let stored = rawChunk("stored chunk")
        let absent = rawChunk("never stored")
        try await singly.container.putChunk(stored)
        try await batched.container.putChunk(stored)

        // The same entries in both (versions 1 to 5): d/{sub/, f}, e/{g}.
        let (d, sub, f, e, g) = (FileID.random(), FileID.random(), FileID.random(), FileID.random(), FileID.random())
        let setup = [
            putRequest(d, directoryState("d")), putRequest(sub, directoryState("sub", in: d)),
            putRequest(f, fileState("f", in: d, chunks: [stored])), putRequest(e, directoryState("e")),
            putRequest(g, fileState("g", in: e)),
        ]
        for request in setup {
            _ = try await singly.container.commit(request)
            _ = try await batched.container.commit(request)
        }
        let (folder, child) = (FileID.random(), FileID.random())
        let script: [CommitRequest] = [
            putRequest(folder, directoryState("n")),  // v6
            putRequest(child, fileState("k", in: folder, chunks: [stored])),  // v7: a child of the batch's folder
            putRequest(.random(), fileState("d")),  // nameTaken by d
            putRequest(.random(), fileState("orphan", in: .random())),  // parentMissing
            putRequest(.random(), fileState("c", chunks: [absent])),  // chunksMissing
            deleteRequest(e, base: 4),  // directoryNotEmpty
            putRequest(d, base: 1, directoryState("d", in: sub)),  // wouldCreateCycle
            putRequest(f, base: 1, fileState("f2", in: d, chunks: [stored])),  // versionConflict
            putRequest(g, base: 5, fileState("g2", in: e)),  // v8
        ]
        var expected: [CommitOutcome] = []
        for request in script { expected.append(try await singly.container.commit(request)) }
        let answered = try await batched.container.commit(batch: script)

        #expect(answered == expected)
        #expect(answered.map(\.committedEntry?.version) == [6, 7, nil, nil, nil, nil, nil, nil, 8])
        #expect(answered[2] == .nameTaken(by: try #require(try await batched.container.entry(d))))
        #expect(answered[3] == .parentMissing && answered[4] == .chunksMissing([absent.hash]))
        #expect(answered[5] == .directoryNotEmpty && answered[6] == .wouldCreateCycle)
        #expect(answered[7] == .versionConflict(current: try await batched.container.entry(f)))
        #expect(try await batched.container.wholeFeed() == singly.container.wholeFeed())
    }

    /// Later changes see the earlier ones: a chain of renames, each taking the name the one
    /// before freed, and a delete then a new entry of the same name. In the other order the
    /// names are still taken.
    @Test(arguments: ContainerKind.batching)
    func changesAreDecidedInTheirOrder(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let (a, b, c, x) = (FileID.random(), FileID.random(), FileID.random(), FileID.random())
        let va = try await container.mustPut(a, base: 0, fileState("a")).version
        let bEntry = try await container.mustPut(b, base: 0, fileState("b"))
        let vb = bEntry.version
        let vc = try await container.mustPut(c, base: 0, fileState("c")).version
        let xEntry = try await container.mustPut(x, base: 0, fileState("x"))
        let vx = xEntry.version

        // Reversed, every rename finds its new name still taken, and the new "x" too.
        let newX = FileID.random()
        let reversed = try await container.commit(batch: [
            putRequest(newX, fileState("x")),
            putRequest(c, base: vc, fileState("b")),
            putRequest(b, base: vb, fileState("a")),
            putRequest(a, base: va, fileState("z")),
            deleteRequest(x, base: vx),
        ])
        #expect(reversed[0] == .nameTaken(by: xEntry))
        #expect(reversed[1] == .nameTaken(by: bEntry))
        #expect(reversed[2].committedEntry == nil && reversed[3].committedEntry != nil)
        #expect(reversed[4].committedEntry?.isDeleted == true)

        let va2 = try #require(reversed[3].committedEntry).version
        let chained = try await container.commit(batch: [
            putRequest(b, base: vb, fileState("a")),
            putRequest(c, base: vc, fileState("b")),
            putRequest(newX, fileState("x")),
        ])
        #expect(chained.allSatisfy { $0.committedEntry != nil }, "\(chained)")
        var names: [String: FileID] = [:]
        for entry in try await container.wholeFeed() where !entry.isDeleted && entry.id != .root {
            names[String(decoding: entry.state.name, as: UTF8.self)] = entry.id
        }
        #expect(names == ["z": a, "a": b, "b": c, "x": newX])
        #expect(try await container.entry(a)?.version == va2)
    }

    /// A refused change in the middle changes nothing (not even a version); the ones after it
    /// are still decided and committed.
    @Test(arguments: ContainerKind.batching)
    func aRefusedChangeInTheMiddleChangesNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let (first, refused, last) = (FileID.random(), FileID.random(), FileID.random())
        let outcomes = try await container.commit(batch: [
            putRequest(first, fileState("same")),
            putRequest(refused, fileState("same")),
            putRequest(last, fileState("other")),
        ])
        let firstEntry = try #require(outcomes[0].committedEntry)
        #expect(outcomes[1] == .nameTaken(by: firstEntry))
        let lastEntry = try #require(outcomes[2].committedEntry)
        #expect(lastEntry.version == firstEntry.version + 1)
        #expect(try await container.entry(refused) == nil)
        #expect(try await container.wholeFeed().map(\.id) == [first, last])
    }

    /// A malformed change anywhere in the batch (a bad name; deleting an entry that is not live)
    /// refuses the whole batch with `invalidRequest`: nothing stored, no version used.
    @Test(arguments: ContainerKind.batching)
    func aMalformedChangeAnywhereStoresNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let existing = try await container.mustPut(.random(), base: 0, directoryState("existing"))
        let malformed: [CommitRequest] = [
            putRequest(.random(), fileState("a/b")),
            deleteRequest(.random(), base: 0),
        ]
        for bad in malformed {
            for position in 0...2 {
                var batch = [putRequest(.random(), fileState("one")), putRequest(.random(), fileState("two"))]
                batch.insert(bad, at: position)
                let error = await protocolError { _ = try await container.commit(batch: batch) }
                #expect(error?.isInvalidRequest == true, "\(bad.change) at \(position): \(String(describing: error))")
                #expect(try await container.wholeFeed() == [existing])
            }
        }
        let next = try await container.mustPut(.random(), base: 0, fileState("next"))
        #expect(next.version == existing.version + 1)
    }

    /// Batches beyond `CommitBatch.maximumChanges`, or naming an entry twice, are refused whole.
    @Test(arguments: ContainerKind.batching)
    func oversizedAndDuplicatingBatchesAreRefusedWhole(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tooMany = (0...CommitBatch.maximumChanges).map { putRequest(.random(), fileState("f\($0)")) }
        #expect(await protocolError { _ = try await container.commit(batch: tooMany) }?.isInvalidRequest == true)
        let twice = FileID.random()
        let duplicating = [
            putRequest(twice, fileState("one")), putRequest(.random(), fileState("two")),
            putRequest(twice, fileState("three")),
        ]
        #expect(await protocolError { _ = try await container.commit(batch: duplicating) }?.isInvalidRequest == true)
        #expect(try await container.wholeFeed().isEmpty)

        // The largest batch allowed is taken whole.
        let largest = Array(tooMany.prefix(CommitBatch.maximumChanges))
        let outcomes = try await container.commit(batch: largest)
        #expect(outcomes.compactMap(\.committedEntry?.version) == Array(1...EntryVersion(largest.count)))
    }

    /// The storage failing part-way through a batch stores none of it: the feed and the entries
    /// are unchanged, and the next commit takes the next version as if the batch never was.
    @Test(arguments: ContainerKind.failingStorage)
    func aStorageFailurePartWayStoresNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let existing = try await container.mustPut(.random(), base: 0, directoryState("existing"))
        try await StorageFailure.install(in: container)
        var batch = [
            putRequest(.random(), fileState("one")), putRequest(.random(), fileState("two")),
            putRequest(.random(), fileState(StorageFailure.name)), putRequest(.random(), fileState("four")),
        ]
        let error = await protocolError { _ = try await container.commit(batch: batch) }
        #expect(error != nil && error?.isInvalidRequest == false, "\(String(describing: error))")
        #expect(try await container.wholeFeed() == [existing])
        for request in batch { #expect(try await container.entry(request.id) == nil) }

        batch[2] = putRequest(.random(), fileState("three"))
        let outcomes = try await container.commit(batch: batch)
        #expect(outcomes.map(\.committedEntry?.version) == (1...4).map { existing.version + $0 })
    }

    /// The feed lists a batch's entries in the batch's order, at consecutive versions.
    @Test(arguments: ContainerKind.batching)
    func theFeedListsTheBatchInItsOrder(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let cursor = try await container.currentCursor()
        let folder = FileID.random()
        var batch = [putRequest(folder, directoryState("folder"))]
        for index in 0..<30 { batch.append(putRequest(.random(), fileState("file-\(30 - index)", in: folder))) }
        let outcomes = try await container.commit(batch: batch)
        let page = try await container.changes(after: cursor, limit: 1_000)
        #expect(page.entries.map(\.id) == batch.map(\.id))
        #expect(page.entries == outcomes.compactMap(\.committedEntry))
        let versions = page.entries.map(\.version)
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $1 == $0 + 1 })
    }

    /// A waiter wakes once for a batch, and then sees all of it: the batch became visible at
    /// once (one commit after another would wake it at the first, with the rest still to come).
    @Test(arguments: ContainerKind.batching)
    func aWaiterWakesOnceAndSeesTheWholeBatch(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let cursor = try await container.currentCursor()
        let waiter = Task { () throws -> (Bool, ChangeBatch) in
            let woke = try await container.waitForChanges(after: cursor, timeout: .seconds(60))
            return (woke, try await container.changes(after: cursor, limit: 1_000))
        }
        await Task.yield()
        let batch = (0..<200).map { putRequest(.random(), fileState("file-\($0)")) }
        let outcomes = try await container.commit(batch: batch)
        let (woke, seen) = try await waiter.value
        #expect(woke)
        #expect(seen.entries.count == batch.count, "the waiter saw \(seen.entries.count) of \(batch.count)")
        #expect(seen.entries == outcomes.compactMap(\.committedEntry))
        #expect(try await container.waitForChanges(after: seen.cursor, timeout: .milliseconds(200)) == false)
    }

    // MARK: putChunks

    @Test(arguments: ContainerKind.batching)
    func putChunksStoresEachChunkIdempotently(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let chunks = (0..<50).map { rawChunk("chunk \($0) " + String(repeating: "x", count: $0 * 37)) }
        let hashes = chunks.map(\.hash)
        #expect(try await container.missingChunks(hashes) == hashes)
        // A hash twice in one call is a client bug: refused, nothing stored.
        #expect(await protocolError { try await container.putChunks(chunks + [chunks[0]]) }?.isInvalidRequest == true)
        #expect(try await container.missingChunks(hashes) == hashes)
        try await container.putChunks(chunks)
        #expect(try await container.missingChunks(hashes).isEmpty)
        try await container.putChunks(Array(chunks.prefix(10)))  // again: idempotent
        for chunk in [chunks[0], chunks[25], chunks[49]] { #expect(try await container.chunk(chunk.hash) == chunk) }

        // A commit may reference them at once.
        let entry = try await container.mustPut(.random(), base: 0, fileState("f", chunks: chunks))
        #expect(entry.state.manifest.map(\.hash) == hashes)
    }

    @Test(arguments: ContainerKind.batching)
    func putChunksBeyondTheLimitsStoresNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let tooMany = (0...CommitBatch.maximumChunks).map { rawChunk("chunk \($0)") }
        #expect(await protocolError { try await container.putChunks(tooMany) }?.isInvalidRequest == true)
        #expect(try await container.missingChunks(tooMany.map(\.hash)).count == tooMany.count)

        // Over the byte limit: the limit is checked before anything else, so the chunks need no
        // true hashes (and share one payload).
        let big = 4 << 20
        let payload = [UInt8](repeating: 7, count: big)
        let tooLarge = (0..<(CommitBatch.maximumChunkBytes / big + 1)).map { index in
            EncodedChunk(hash: sha256([UInt8(index)]), encoding: .raw, plainLength: big, payload: payload)
        }
        #expect(await protocolError { try await container.putChunks(tooLarge) }?.isInvalidRequest == true)
        #expect(try await container.missingChunks(tooLarge.map(\.hash)).count == tooLarge.count)

        var malformed = rawChunk("abc")
        malformed.plainLength = 4
        let good = rawChunk("good")
        // Each chunk as `putChunk` would: the malformed one is refused (the others may be stored).
        #expect(await protocolError { try await container.putChunks([good, malformed]) }?.isInvalidRequest == true)
        #expect(try await container.missingChunks([malformed.hash]) == [malformed.hash])
    }
}
