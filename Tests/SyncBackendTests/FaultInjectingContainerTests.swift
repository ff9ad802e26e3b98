import SyncBackendTesting
import Testing

@testable import SyncBackend

@Suite("FaultInjectingContainer")
struct FaultInjectingContainerTests {
    @Test func anOutageFailsEverythingUntilItEnds() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        let chunk = rawChunk("c")
        faulty.startOutage()
        let calls: [() async throws -> Void] = [
            { _ = try await faulty.missingChunks([chunk.hash]) },
            { try await faulty.putChunk(chunk) },
            { _ = try await faulty.chunk(chunk.hash) },
            { _ = try await faulty.entry(.root) },
            { _ = try await faulty.put(.random(), base: 0, directoryState("d")) },
            { _ = try await faulty.commit(batch: [putRequest(.random(), directoryState("d"))]) },
            { _ = try await faulty.commit(allOrNothing: [putRequest(.random(), directoryState("d"))]) },
            { try await faulty.putChunks([chunk]) },
            { _ = try await faulty.changes(after: .beginning, limit: 1) },
            { _ = try await faulty.waitForChanges(after: .beginning, timeout: .seconds(1)) },
            { _ = try await faulty.history(of: .root, limit: 1) },
            { _ = try await faulty.locks(on: .root) },
        ]
        for call in calls {
            let error = await protocolError(call)
            #expect(error?.isUnavailable == true && error?.isRetryable == true)
        }
        #expect(try await faulty.base.changes(after: .beginning, limit: 1).entries.isEmpty)  // nothing forwarded

        faulty.endOutage()
        try await faulty.putChunk(chunk)
        let file = FileID.random()
        try await faulty.mustPut(file, base: 0, fileState("f", chunks: [chunk]))
        #expect(try await faulty.history(of: file, limit: 5).map(\.entry.state.name) == [Array("f".utf8)])
        #expect(try await faulty.locks(on: file).isEmpty)
        let twice: Set<FaultInjectingContainer.Operation> = [.putChunk, .commit, .history, .locks]
        for operation in FaultInjectingContainer.Operation.allCases {
            #expect(faulty.callCount(operation) == (twice.contains(operation) ? 2 : 1))
        }
    }

    @Test func queuedFailuresHitOnlyTheNextCalls() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        faulty.failNext(2, .entry, with: .storageFailure("disk full"))
        #expect(await protocolError { _ = try await faulty.entry(.root) } == .storageFailure("disk full"))
        #expect(await protocolError { _ = try await faulty.entry(.root) } == .storageFailure("disk full"))
        #expect(try await faulty.entry(.root)?.version == 0)
        #expect(faulty.callCount(.entry) == 3)
    }

    /// A batch's queued failure throws before the base is reached (to the caller, the storage
    /// failed part-way and nothing was stored); the next batch goes through, whole.
    @Test func aQueuedBatchFailureStoresNothing() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        let batch = [putRequest(.random(), directoryState("a")), putRequest(.random(), directoryState("b"))]
        faulty.failNext(1, .commitBatch, with: .storageFailure("disk full"))
        #expect(await protocolError { _ = try await faulty.commit(batch: batch) } == .storageFailure("disk full"))
        #expect(try await faulty.base.wholeFeed().isEmpty)
        let outcomes = try await faulty.commit(batch: batch)
        #expect(try await faulty.base.wholeFeed() == outcomes.compactMap(\.committedEntry))
        #expect(faulty.callCount(.commitBatch) == 2 && faulty.callCount(.commit) == 0)
    }

    /// The same for all or nothing: a queued failure throws before the base is reached, a lost
    /// answer after the base committed every change.
    @Test func anAllOrNothingCommitTakesFaultsAsABatchDoes() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        let requests = [putRequest(.random(), directoryState("a")), putRequest(.random(), directoryState("b"))]
        faulty.failNext(1, .commitAllOrNothing, with: .storageFailure("disk full"))
        #expect(
            await protocolError { _ = try await faulty.commit(allOrNothing: requests) } == .storageFailure("disk full"))
        #expect(try await faulty.base.wholeFeed().isEmpty)
        faulty.loseNextCommitAnswers()
        #expect(await protocolError { _ = try await faulty.commit(allOrNothing: requests) }?.isUnavailable == true)
        #expect(try await faulty.base.wholeFeed().map(\.id) == requests.map(\.id))
        #expect(faulty.callCount(.commitAllOrNothing) == 2 && faulty.callCount(.commitBatch) == 0)
    }

    /// A `putChunks` that fails part-way leaves exactly its first chunks stored, each whole.
    @Test func aChunkBatchCanFailPartWay() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        let chunks = (0..<5).map { rawChunk("chunk \($0)") }
        faulty.failNextPutChunksPartWay(afterStoring: 2)
        let error = await protocolError { try await faulty.putChunks(chunks) }
        #expect(error?.isRetryable == true, "\(String(describing: error))")
        #expect(try await faulty.base.missingChunks(chunks.map(\.hash)) == chunks.suffix(3).map(\.hash))
        for chunk in chunks.prefix(2) { #expect(try await faulty.base.chunk(chunk.hash) == chunk) }
        try await faulty.putChunks(chunks)
        #expect(try await faulty.base.missingChunks(chunks.map(\.hash)).isEmpty)
        #expect(faulty.callCount(.putChunks) == 2 && faulty.callCount(.putChunk) == 0)
    }

    /// A batch's lost answer: the batch was applied, the caller hears `unavailable`.
    @Test func aBatchAnswerCanBeLost() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        let id = FileID.random()
        faulty.loseNextCommitAnswers()
        let error = await protocolError { _ = try await faulty.commit(batch: [putRequest(id, directoryState("a"))]) }
        #expect(error?.isUnavailable == true)
        #expect(try await faulty.base.entry(id)?.state == directoryState("a"))
    }

    @Test func delaysSlowCallsDown() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        faulty.delay(.entry, by: .milliseconds(150))
        let start = ContinuousClock.now
        _ = try await faulty.entry(.root)
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        faulty.delay(.entry, by: nil)
    }

    /// The answer of a commit is lost after the container applied it. The client retries with
    /// the same base and gets `versionConflict` whose current entry is exactly what it sent (its
    /// state and its device): that is how a client recognises its own lost commit.
    @Test(arguments: ContainerKind.plainCases)
    func aLostCommitAnswerIsRecognisedOnRetry(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let faulty = FaultInjectingContainer(fixture.container)
        let id = FileID.random()
        let state = directoryState("mine")
        faulty.loseNextCommitAnswers()
        #expect(
            await protocolError { _ = try await faulty.put(id, base: 0, state, device: "me") }?.isUnavailable == true)

        let stored = try #require(try await faulty.entry(id))
        #expect(stored.state == state)
        let retry = try await faulty.put(id, base: 0, state, device: "me")
        guard case .versionConflict(let current?) = retry else {
            Issue.record("expected a version conflict, got \(retry)")
            return
        }
        #expect(current.state == state && current.device == "me" && !current.isDeleted)
    }

    @Test(arguments: ContainerKind.plainCases)
    func aPartialChunkWriteLeavesNothingVisible(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let faulty = FaultInjectingContainer(fixture.container)
        let chunk = rawChunk("half written")
        faulty.failNextPutChunksAsPartialWrites()
        let error = await protocolError { try await faulty.putChunk(chunk) }
        #expect(error?.isRetryable == true)
        #expect(try await faulty.missingChunks([chunk.hash]) == [chunk.hash])
        #expect(await protocolError { _ = try await faulty.chunk(chunk.hash) } == .chunkNotFound(chunk.hash))
        #expect(
            try await faulty.put(.random(), base: 0, fileState("f", chunks: [chunk])) == .chunksMissing([chunk.hash]))

        try await faulty.putChunk(chunk)
        #expect(try await faulty.chunk(chunk.hash) == chunk)
    }

    @Test func aCorruptedDownloadDoesNotMatchItsHash() async throws {
        let faulty = FaultInjectingContainer(InMemoryContainer())
        let chunk = rawChunk("pristine bytes")
        try await faulty.putChunk(chunk)
        faulty.corruptNextChunkPayloads()
        let corrupted = try await faulty.chunk(chunk.hash)
        #expect(corrupted.payload != chunk.payload)
        #expect(sha256(corrupted.payload) != chunk.hash)
        #expect(try await faulty.chunk(chunk.hash) == chunk)
    }
}
