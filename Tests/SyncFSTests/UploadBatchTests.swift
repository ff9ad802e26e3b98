import Glibc
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// The uploader sends what is ready together (`Uploader.uploadTogether`): one `commit(batch:)`
/// for many queued changes, each change prepared and answered as a lone upload's would be, and
/// a lone change still goes at once.
@Suite struct UploadBatchTests {
    @Test func fiveHundredQueuedFilesGoInAFewBatchCommits() async throws {
        let counting = CountingContainer(base: InMemoryContainer())
        let pair = try SyncedPair(container: counting.base, viewOfA: counting)
        try pair.withEngineAStopped {
            for index in 0..<500 { try pair.a.makeFile("file-\(index).txt", contents: bytes("content \(index)\n")) }
        }
        try await eventually("all 500 on B", timeout: 120) { try pair.b.childNames().count == 500 }
        try await pair.settle()
        #expect(counting.singleCommits.load(ordering: .acquiring) == 0, "a queued file went alone")
        let batches = counting.batchSizes.withLock { $0 }
        #expect(batches.count <= 4, "500 files took \(batches.count) batch commits: \(batches)")
        #expect(batches.reduce(0, +) == 500)
        #expect(counting.singleChunkPuts.load(ordering: .acquiring) == 0, "a chunk went by itself")
        #expect(try contents(pair.b, "file-321.txt") == bytes("content 321\n"))
    }

    @Test func aNewFolderAndItsChildrenGoInOneBatch() async throws {
        let counting = CountingContainer(base: InMemoryContainer())
        let pair = try SyncedPair(container: counting.base, viewOfA: counting)
        try await queueWhilePaused(pair) {
            let docs = try pair.a.mkdir("docs")
            let inner = try pair.a.mkdir("inner", in: docs)
            for index in 0..<5 {
                try pair.a.makeFile("d\(index).txt", in: docs, contents: bytes("d\(index)"))
                try pair.a.makeFile("i\(index).txt", in: inner, contents: bytes("i\(index)"))
            }
        }
        try await eventually("docs/inner/i4.txt on B") { try contents(pair.b, "docs/inner/i4.txt") == bytes("i4") }
        try await pair.settle()
        #expect(counting.batchSizes.withLock { $0 } == [12], "the folders and their children in one batch")
        #expect(counting.singleCommits.load(ordering: .acquiring) == 0)
    }

    @Test func aConflictInTheMiddleOfABatchIsResolvedAsAloneAndTheRestCommit() async throws {
        let counting = CountingContainer(base: InMemoryContainer())
        let pair = try SyncedPair(container: counting.base, viewOfA: counting)
        let shared = try pair.a.makeFile("shared.bin", contents: [0, 1, 2, 3])
        try await eventually("shared.bin on B") { try contents(pair.b, "shared.bin") == [0, 1, 2, 3] }
        try await pair.settle()
        let pause = pair.engineA.pause
        pause.pause(PauseState(until: nil, scope: .sync))
        // B's edit reaches the container while A is paused; A's edit of the same file is
        // queued between two new files.
        let handle = try pair.b.fs.open(try pair.b.lookupIno("shared.bin"), flags: O_RDWR, caller: testCaller)
        try pair.b.write(handle, [0xB0, 0xB1], at: 0)
        pair.b.fs.fileIO.release(handle)
        try await eventually("B's edit committed") { pair.b.fs.outbox.items.isEmpty }
        try pair.a.makeFile("before.txt", contents: bytes("before"))
        let writer = try pair.a.fs.open(shared, flags: O_RDWR, caller: testCaller)
        try pair.a.write(writer, [0xA0, 0xA1], at: 0)
        pair.a.fs.fileIO.release(writer)
        try pair.a.makeFile("after.txt", contents: bytes("after"))
        let batchesBefore = counting.batchSizes.withLock { $0.count }
        let outbox = pair.a.fs.outbox
        try await eventually("every change ready") { outbox.items.allSatisfy { $0.readyAt <= outbox.now } }
        _ = pause.resume()

        try await eventually("before.txt and after.txt on B") {
            try contents(pair.b, "before.txt") == bytes("before") && contents(pair.b, "after.txt") == bytes("after")
        }
        try await pair.settle()
        // Nothing lost: both edits are on B (one of them as a conflict copy).
        try await eventually("both edits on B") {
            let all = try pair.b.childNames().map { try contents(pair.b, $0) }
            return all.contains([0xA0, 0xA1, 2, 3]) && all.contains([0xB0, 0xB1, 2, 3])
        }
        let names = try pair.b.childNames()
        #expect(names.count == 4, "\(names)")
        let batches = counting.batchSizes.withLock { Array($0.dropFirst(batchesBefore)) }
        #expect(batches.first == 3, "the three changes went as one batch: \(batches)")
        #expect(counting.singleCommits.load(ordering: .acquiring) >= 1, "the conflict was resolved alone")
    }

    @Test func aDeleteAndACreateOfTheSameNameGoInOrder() async throws {
        let counting = CountingContainer(base: InMemoryContainer())
        let pair = try SyncedPair(container: counting.base, viewOfA: counting)
        let old = try pair.a.makeFile("name.txt", contents: bytes("old"))
        try await eventually("name.txt on B") { try contents(pair.b, "name.txt") == bytes("old") }
        try await pair.settle()
        let oldID = try #require(pair.a.fileID(of: old))
        let singlesBefore = counting.singleCommits.load(ordering: .acquiring)
        try await queueWhilePaused(pair) {
            try pair.a.fs.unlink(parent: .root, name: FileName("name.txt"))
            try pair.a.makeFile("name.txt", contents: bytes("new"))
            try pair.a.makeFile("other.txt", contents: bytes("other"))
        }
        try await eventually("the new name.txt on B") { try contents(pair.b, "name.txt") == bytes("new") }
        try await pair.settle()
        #expect(try pair.b.childNames() == ["name.txt", "other.txt"])
        #expect(try await counting.base.entry(oldID)?.isDeleted == true)
        #expect(counting.batchSizes.withLock { $0.last } == 3)
        #expect(counting.singleCommits.load(ordering: .acquiring) == singlesBefore, "a change of the batch was refused")
    }

    @Test func theMassDeleteGuardHoldsAMassDeleteTakenAsABatch() async throws {
        let counting = CountingContainer(base: InMemoryContainer())
        let pair = try SyncedPair(container: counting.base, viewOfA: counting)
        let folder = try pair.a.mkdir("photos")
        for index in 0..<80 { try pair.a.makeFile("p\(index).jpg", in: folder, contents: bytes("photo \(index)")) }
        try await eventually("photos on B") { try pair.b.childNames(of: pair.b.lookupIno("photos")).count == 80 }
        try await pair.settle()
        // A new engine on A: every version is established for it (it never saw one arrive).
        try pair.withEngineAStopped {
            for index in 0..<80 { try pair.a.fs.unlink(parent: folder, name: FileName("p\(index).jpg")) }
        }
        try await eventually("the guard holds") { pair.engineA.uploader.deleteGuard.isHeld }
        let live = try await liveChildren(of: pair.a.fileID(of: folder), in: counting.base)
        #expect(live >= 80 - DeleteWindow.Thresholds.standard.prompt, "the guard let \(80 - live) deletes go")
    }

    @Test func aLoneChangeGoesAtOnceByItself() async throws {
        let counting = CountingContainer(base: InMemoryContainer())
        let pair = try SyncedPair(container: counting.base, viewOfA: counting)
        try await pair.settle()
        let ino = try pair.a.makeFile("lone.txt", contents: bytes("lone"))
        let id = try #require(pair.a.fileID(of: ino))
        try await eventually("lone.txt committed") { try await counting.base.entry(id) != nil }
        // How soon is the bench's (propagation p50); here, that it went alone, not in a batch.
        #expect(counting.singleCommits.load(ordering: .acquiring) == 1)
        #expect(counting.batchSizes.withLock { $0 }.isEmpty, "a lone change waited for a batch")
    }
}

/// Runs `body` (local changes on A) while A's uploads are paused, waits until every change is
/// ready (its quiet delay over), then resumes: the uploader finds them all ready at once.
private func queueWhilePaused(_ pair: SyncedPair, _ body: () throws -> Void) async throws {
    let pause = pair.engineA.pause
    pause.pause(PauseState(until: nil, scope: .sync))
    try body()
    let outbox = pair.a.fs.outbox
    try await eventually("every change ready") { outbox.items.allSatisfy { $0.readyAt <= outbox.now } }
    _ = pause.resume()
}

/// Live entries whose parent is `folder` in `container` (read from its feed).
private func liveChildren(of folder: FileID?, in container: InMemoryContainer) async throws -> Int {
    let batch = try await container.changes(after: .beginning, limit: 10_000)
    return batch.entries.filter { !$0.isDeleted && $0.state.parent == folder }.count
}

/// Forwards every call to `base` and counts the commits and chunk puts, one by one and batched.
final class CountingContainer: ForwardingTestContainer {
    let base: InMemoryContainer
    let singleCommits = Atomic(0)
    let singleChunkPuts = Atomic(0)
    /// The number of changes of each `commit(batch:)`, in order.
    let batchSizes = Mutex<[Int]>([])
    /// The number of chunks of each `putChunks`, in order.
    let chunkBatchSizes = Mutex<[Int]>([])

    init(base: InMemoryContainer) { self.base = base }

    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        singleCommits.add(1, ordering: .acquiringAndReleasing)
        return try await base.commit(request)
    }

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        batchSizes.withLock { $0.append(requests.count) }
        return try await base.commit(batch: requests)
    }

    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        singleChunkPuts.add(1, ordering: .acquiringAndReleasing)
        try await base.putChunk(chunk)
    }

    func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        chunkBatchSizes.withLock { $0.append(chunks.count) }
        try await base.putChunks(chunks)
    }
}
