import Glibc
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// The content state machine as the daemon runs it: real file systems and engines driven through
/// the main paths, the node's `ContentLifecycle` state asserted at each step. In the engine suite
/// (serialized: engines are stopped one at a time).
extension SyncEngineTests {
    private typealias State = ContentLifecycle.State

    /// The machine's state of the file `name` as its node and the outbox hold it.
    private func lifecycle(_ fixture: FileSystemFixture, _ name: String) throws -> State {
        let ino = try fixture.lookupIno(name)
        return fixture.fs.live.transact { tree in
            let node = tree.nodes[ino]!
            return node.contentState(queued: fixture.fs.outbox.isPending(node.fileID))
        }
    }

    private func node(_ fixture: FileSystemFixture, _ name: String) throws -> Node {
        let ino = try fixture.lookupIno(name)
        return fixture.fs.live.transact { tree in tree.nodes[ino]! }
    }

    @Test func aWrittenFileIsDirtyUntilItsUploadIsCommittedThenClean() async throws {
        let pair = try SyncedPair()
        _ = try pair.a.makeFile("doc.txt", contents: bytes("first"))
        try await pair.settle()
        #expect(try lifecycle(pair.a, "doc.txt") == State(.local, .clean))
        try pair.withEngineAStopped {
            let handle = try pair.a.fs.open(try pair.a.lookupIno("doc.txt"), flags: O_WRONLY, caller: testCaller)
            try pair.a.write(handle, bytes("second"), at: 0)
            // Written, not yet recorded: dirty, and held by the node alone (no outbox row yet).
            #expect(try lifecycle(pair.a, "doc.txt") == State(.local, .dirty))
            #expect(try node(pair.a, "doc.txt").heldContent.hasUnrecordedWrites)
            #expect(!pair.a.fs.outbox.isPending(try node(pair.a, "doc.txt").fileID))
            pair.a.fs.fileIO.release(handle)
            // Recorded on close: the outbox holds the change now.
            #expect(try !node(pair.a, "doc.txt").heldContent.hasUnrecordedWrites)
            #expect(try lifecycle(pair.a, "doc.txt") == State(.local, .dirty))
        }
        try await eventually("uploaded") { try lifecycle(pair.a, "doc.txt") == State(.local, .clean) }
        try await eventually("on B") { try contents(pair.b, "doc.txt") == bytes("second") }
    }

    @Test func aPlaceholderHydratesToLocalAndEvictionMakesItAPlaceholderAgain() async throws {
        let base = InMemoryContainer()
        let viewOfB = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: viewOfB)
        let data = SeededGenerator.bytes(count: 1 << 20, seed: 5)
        _ = try pair.a.makeFile("big.bin", contents: data)
        try await eventually("on B") { try pair.b.childNames() == ["big.bin"] }
        try await pair.settle()
        #expect(try lifecycle(pair.b, "big.bin") == State(.placeholder, .clean))

        // The download waits for its chunks: hydrating meanwhile.
        viewOfB.delay(.chunk, by: .milliseconds(300))
        let file = try node(pair.b, "big.bin")
        let hydration = try pair.b.fs.residency.hydrations.hydration(of: file)
        #expect(hydration != nil)
        #expect(try lifecycle(pair.b, "big.bin") == State(.hydrating, .clean))
        viewOfB.delay(.chunk, by: nil)
        try await eventually("downloaded") { try lifecycle(pair.b, "big.bin") == State(.local, .clean) }
        #expect(try contents(pair.b, "big.bin") == data)

        let outcome = try pair.b.fs.residency.eviction.evict(below: try pair.b.lookupIno("big.bin")).first?.outcome
        #expect(outcome == .evicted(bytes: 1 << 20))
        #expect(try lifecycle(pair.b, "big.bin") == State(.placeholder, .clean))
        #expect(try contents(pair.b, "big.bin") == data, "read back through a new download")
        try await eventually("local again") { try lifecycle(pair.b, "big.bin") == State(.local, .clean) }
    }

    @Test func aRemoteChangeWhileDirtyLeavesTheLocalChangeInPlace() async throws {
        let base = InMemoryContainer()
        let viewOfA = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: viewOfA)
        _ = try pair.a.makeFile("doc.txt", contents: bytes("base"))
        try await eventually("on B") { try contents(pair.b, "doc.txt") == bytes("base") }
        try await pair.settle()

        // A's uploads fail (its feed still works): A's edit stays uncommitted.
        viewOfA.startOutage([.missingChunks, .putChunk, .commit])
        let handle = try pair.a.fs.open(try pair.a.lookupIno("doc.txt"), flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.a.write(handle, bytes("edit on A"), at: 0)
        pair.a.fs.fileIO.release(handle)
        // Its upload is tried again and again: dirty between the attempts, uploading during one.
        let notCommitted = [State(.local, .dirty), State(.local, .uploading)]
        #expect(notCommitted.contains(try lifecycle(pair.a, "doc.txt")))

        // B changes the file; A's follower reads the change (two feed reads after the commit).
        let edited = try pair.b.fs.open(try pair.b.lookupIno("doc.txt"), flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.b.write(edited, bytes("edit on B"), at: 0)
        pair.b.fs.fileIO.release(edited)
        try await eventually("B's edit committed") { pair.b.fs.outbox.items.isEmpty }
        let reads = viewOfA.callCount(.changes)
        try await eventually("A read the feed since") { viewOfA.callCount(.changes) >= reads + 2 }
        #expect(notCommitted.contains(try lifecycle(pair.a, "doc.txt")), "the remote change is deferred")
        #expect(try contents(pair.a, "doc.txt") == bytes("edit on A"))

        // Uploads work again: the edit goes up, the conflict is resolved, the file is clean.
        viewOfA.endOutage()
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        try await eventually("clean") { try lifecycle(pair.a, "doc.txt").modification == .clean }
    }

    /// The guard's `discard` reads a queued rewrite as an upload would, without uploading it: that
    /// look leaves the file `dirty`. (It used to take the file: nothing gave it back, and a file
    /// whose change discard then dropped stayed `uploading` — shown as modified, never evicted.)
    @Test func aLookAtAQueuedFileForTheGuardLeavesItDirty() async throws {
        let fixture = try FileSystemFixture()
        _ = try fixture.makeFile("doc.txt", contents: bytes("first"))
        try overwrite(fixture, "doc.txt", "second")
        #expect(try lifecycle(fixture, "doc.txt") == State(.local, .dirty))
        let uploads = UploadRecords(fileSystem: fixture.fs)
        let id = try node(fixture, "doc.txt").fileID

        guard case .put(let looked) = uploads.prepareUpload(id, taking: false) else {
            Issue.record("a queued local file gives what to upload")
            return
        }
        if let content = looked.content { close(content.descriptor) }
        #expect(try lifecycle(fixture, "doc.txt") == State(.local, .dirty), "a look takes nothing")
        #expect(try !node(fixture, "doc.txt").heldContent.isTakenForUpload)

        guard case .put(let taken) = uploads.prepareUpload(id) else {
            Issue.record("the uploader's take gives the same")
            return
        }
        if let content = taken.content { close(content.descriptor) }
        #expect(try lifecycle(fixture, "doc.txt") == State(.local, .uploading), "the uploader's take does")
    }

    /// Writes `text` over the file `name` through open, write and release (recorded on release).
    private func overwrite(_ fixture: FileSystemFixture, _ name: String, _ text: String) throws {
        let handle = try fixture.fs.open(try fixture.lookupIno(name), flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try fixture.write(handle, bytes(text), at: 0)
        fixture.fs.fileIO.release(handle)
    }

    /// The uploader's half of the machine, as the daemon runs it: a file whose commit is at the
    /// container is `uploading`; the commit makes it clean; a write during the upload makes it
    /// dirty, and the commit of what was taken leaves it dirty; a failed commit gives it back.
    @Test func aFileIsUploadingWhileItsCommitIsInFlight() async throws {
        let base = InMemoryContainer()
        let gate = CommitGate(base)
        defer { gate.open() }
        let pair = try SyncedPair(container: base, viewOfA: gate)
        _ = try pair.a.makeFile("doc.txt", contents: bytes("first"))
        try await pair.settle()
        #expect(try lifecycle(pair.a, "doc.txt") == State(.local, .clean))

        // The commit waits at the container: taken, unchanged since.
        gate.close()
        try overwrite(pair.a, "doc.txt", "second")
        try await eventually("the commit is at the container") { gate.waiting == 1 }
        #expect(try lifecycle(pair.a, "doc.txt") == State(.local, .uploading))
        #expect(try node(pair.a, "doc.txt").heldContent.isTakenForUpload)
        gate.open()
        try await eventually("committed") { try lifecycle(pair.a, "doc.txt") == State(.local, .clean) }
        #expect(try !node(pair.a, "doc.txt").heldContent.isTakenForUpload)

        // Written while the commit waits: dirty at once, and still dirty once it is committed;
        // the newer content goes next.
        gate.close()
        try overwrite(pair.a, "doc.txt", "third")
        try await eventually("the commit is at the container") { gate.waiting == 1 }
        #expect(try lifecycle(pair.a, "doc.txt") == State(.local, .uploading))
        let handle = try pair.a.fs.open(try pair.a.lookupIno("doc.txt"), flags: O_WRONLY, caller: testCaller)
        try pair.a.write(handle, bytes("fourth"), at: 0)
        #expect(try lifecycle(pair.a, "doc.txt") == State(.local, .dirty), "the write path clears the mark")
        pair.a.fs.fileIO.release(handle)

        // Every commit fails (the taken one first): after each the file is given back, dirty
        // until the next round takes it again.
        gate.fail(with: .storageFailure("injected"))
        try await eventually("the taken commit failed") { gate.failed >= 1 }
        let failedBefore = gate.failed
        try await eventually("a later commit failed and the file was given back") {
            guard gate.failed > failedBefore else { return false }
            return try lifecycle(pair.a, "doc.txt") == State(.local, .dirty)
                && !node(pair.a, "doc.txt").heldContent.isTakenForUpload
        }
        gate.open()
        pair.a.fs.outbox.expediteAll()
        try await eventually("on B") { try contents(pair.b, "doc.txt") == bytes("fourth") }
        try await eventually("clean") { try lifecycle(pair.a, "doc.txt") == State(.local, .clean) }
    }
}
