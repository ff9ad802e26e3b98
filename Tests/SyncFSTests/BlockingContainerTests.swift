import Foundation
import SyncBackend
import SyncBackendTesting
import Testing

@testable import SyncFS

/// `BlockingContainer`, the engine threads' one way to the container: answers come through as the
/// container gave them, and every container error crosses as `SyncFailure.container` with the
/// error itself unchanged (so what is transient, refused or a protocol error stays what it was).
/// Each call runs on a thread of its own (`waiting`), as the engine's threads do.
@Suite struct BlockingContainerTests {
    typealias Call = @Sendable (BlockingContainer) throws(SyncFailure) -> Void

    static let content: [UInt8] = Array("blocking".utf8)
    static let chunk = content.withUnsafeBytes { ChunkCodec.encode($0) }
    static let request = CommitRequest(
        id: FileID.random(), baseVersion: 0,
        change: .put(
            EntryState(
                parent: .root, name: Array("f".utf8), kind: .file, mode: 0o644, mtime: 1, size: Int64(content.count),
                manifest: [ChunkRef(hash: chunk.hash, length: Int64(content.count))])),
        device: "test")

    /// One call of each operation, by the fault injector's name for it.
    static let calls: [(FaultInjectingContainer.Operation, Call)] = [
        (.missingChunks, { container throws(SyncFailure) in _ = try container.missingChunks([chunk.hash]) }),
        (.putChunk, { container throws(SyncFailure) in try container.putChunk(chunk) }),
        (.chunk, { container throws(SyncFailure) in _ = try container.chunk(chunk.hash) }),
        (.entry, { container throws(SyncFailure) in _ = try container.entry(FileID.random()) }),
        (.commit, { container throws(SyncFailure) in _ = try container.commit(request) }),
        (.changes, { container throws(SyncFailure) in _ = try container.changes(after: .beginning, limit: 10) }),
        (
            .waitForChanges,
            { container throws(SyncFailure) in try container.waitForChanges(after: .beginning, timeout: .zero) }
        ),
    ]

    @Test func everyContainerErrorCrossesUnchangedFromEveryOperation() async {
        let errors: [ContainerProtocolError] = [
            .unavailable("away"), .busy("overloaded"), .storageFailure("disk full"),
            .chunkNotFound(Self.chunk.hash), .corruptChunk(Self.chunk.hash), .invalidRequest("no"),
        ]
        let faulty = FaultInjectingContainer(InMemoryContainer())
        let blocking = BlockingContainer(base: faulty)
        for (operation, call) in Self.calls {
            for error in errors {
                faulty.failNext(1, operation, with: error)
                let failure = await waiting { () -> SyncFailure? in
                    do throws(SyncFailure) {
                        try call(blocking)
                        return nil
                    } catch {
                        return error
                    }
                }
                guard case .container(let crossed) = failure else {
                    Issue.record("\(operation) with \(error): \(failure.map { "\($0)" } ?? "no error")")
                    continue
                }
                #expect(crossed == error, "\(operation)")
                #expect(failure?.isRetryable == error.isRetryable, "\(operation) with \(error)")
            }
        }
    }

    @Test func answersComeThroughAsTheContainerGaveThem() async throws {
        let blocking = BlockingContainer(base: InMemoryContainer())
        let outcome = await waiting {
            () -> Result<(before: [ChunkHash], after: [ChunkHash], chunk: EncodedChunk), SyncFailure> in
            Result { () throws(SyncFailure) in
                let before = try blocking.missingChunks([Self.chunk.hash])
                try blocking.putChunk(Self.chunk)
                return (before, try blocking.missingChunks([Self.chunk.hash]), try blocking.chunk(Self.chunk.hash))
            }
        }
        let answers = try outcome.get()
        #expect(answers.before == [Self.chunk.hash])
        #expect(answers.after.isEmpty)
        #expect(answers.chunk == Self.chunk)
        let committed = await waiting { () -> Result<(CommitOutcome, RemoteEntry?, ChangeBatch), SyncFailure> in
            Result { () throws(SyncFailure) in
                (
                    try blocking.commit(Self.request), try blocking.entry(Self.request.id),
                    try blocking.changes(after: .beginning, limit: 10)
                )
            }
        }
        let (commit, entry, batch) = try committed.get()
        guard case .committed(let made) = commit else {
            Issue.record("commit: \(commit)")
            return
        }
        #expect(entry == made)
        #expect(batch.entries.map(\.id) == [Self.request.id])
    }

    @Test func aCancelledWaitForChangesEndsLongBeforeItsTimeout() async throws {
        let blocking = BlockingContainer(base: InMemoryContainer())
        let handle = CancelHandle()
        Thread.detachNewThread {
            usleep(200_000)  // scenario: cancel once the wait is under way
            handle.cancel()
        }
        let started = Date()
        let changed = await waiting { () -> Result<Bool, SyncFailure> in
            Result { () throws(SyncFailure) in
                try blocking.waitForChanges(after: .beginning, timeout: .seconds(60), cancellable: handle)
            }
        }
        #expect(try changed.get() == false)
        // A generous bound: the point is that the 60 s wait did not run to its end.
        #expect(Date().timeIntervalSince(started) < 30)
    }
}
