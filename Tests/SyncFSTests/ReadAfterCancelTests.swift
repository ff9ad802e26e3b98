import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// A read waiting for a placeholder's download while the file is truncated through another
/// handle: the download is cancelled, and the read answers from what the file holds now instead
/// of failing with ESTALE (`ReadPath.prepareRead`). In the engine suite (serialized).
extension SyncEngineTests {
    /// A 4 MiB file written on A, a placeholder on B, whose chunks then reach B only after `chunkDelay`.
    private func placeholderOnB(_ name: String, seed: UInt64, chunkDelay: Duration) async throws
        -> (SyncedPair, InodeNumber)
    {
        let base = InMemoryContainer()
        let slow = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: slow)
        _ = try pair.a.makeFile(name, contents: SeededGenerator.bytes(count: 4 << 20, seed: seed))
        try await eventually("on B") { try pair.b.childNames() == [name] }
        try await pair.settle()
        slow.delay(.chunk, by: chunkDelay)
        return (pair, try pair.b.lookupIno(name))
    }

    @Test func aReadWaitingForADownloadOfAFileTruncatedMeanwhileReadsTheTruncatedFile() async throws {
        // Chunks far slower than the test: none arrives before the truncation, even under load.
        let (pair, ino) = try await placeholderOnB("t.bin", seed: 23, chunkDelay: .seconds(10))
        let reader = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { pair.b.fs.fileIO.release(reader) }
        let wait = try #require(
            try pair.b.fs.reads.prepareRead(reader, offset: 1 << 20, count: 4096, processName: { nil }),
            "a placeholder's bytes are downloaded first")
        let outcome = Mutex<FSError??>(nil)
        wait.onEnd { result in outcome.withLock { $0 = .some(result) } }

        let truncating = try pair.b.fs.open(ino, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        pair.b.fs.fileIO.release(truncating)
        try await eventually("the read is answered") {
            outcome.withLock { $0 } != nil
        }
        #expect(outcome.withLock { $0 } == .some(nil), "answered from the cache file, not ESTALE")
        #expect(readBytes(reader.descriptor, count: 4096, at: 1 << 20).isEmpty, "past the new end: end of file")
        #expect(try pair.b.fs.getattr(ino).size == 0)
    }

    /// The kernel learns a truncation's new size from the truncating request's answer (an open's
    /// `O_TRUNC`, a `setattr`), and a direct read whose answer comes first falls back to its page
    /// cache with the old size: the reader got 4096 zero bytes of an empty file. So the waiting
    /// read is answered only after that request: here the request is handled in the adapter's
    /// scope (`AfterReply.handling`), and the read must not be answered before the scope ends.
    @Test func aReadWaitingForATruncatedFileIsAnsweredAfterTheTruncatingRequest() async throws {
        let (pair, ino) = try await placeholderOnB("v.bin", seed: 31, chunkDelay: .seconds(10))
        let reader = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { pair.b.fs.fileIO.release(reader) }
        let wait = try #require(try pair.b.fs.reads.prepareRead(reader, offset: 0, count: 4096, processName: { nil }))
        let outcome = Mutex<FSError??>(nil)
        wait.onEnd { result in outcome.withLock { $0 = .some(result) } }

        let answeredBeforeTheReply = try AfterReply.handling { () throws(FSError) -> Bool in
            let truncating = try pair.b.fs.open(ino, flags: O_WRONLY | O_TRUNC, caller: testCaller)
            pair.b.fs.fileIO.release(truncating)
            usleep(300_000)  // scenario: time for an answer that must wait for the request's own
            return outcome.withLock { $0 } != nil
        }
        #expect(!answeredBeforeTheReply, "the read was answered before the truncating request")
        try await eventually("the read is answered") { outcome.withLock { $0 } != nil }
        #expect(outcome.withLock { $0 } == .some(nil), "answered from the cache file, not ESTALE")
        #expect(readBytes(reader.descriptor, count: 4096, at: 0).isEmpty, "past the new end: end of file")
    }

    /// A read answered already (interrupted) stays answered once, with EINTR, when the download it
    /// waited for is cancelled afterwards (its wait ended with the answer: `ChunkWait.standFor`),
    /// and the truncation goes through.
    @Test func anInterruptedReadIsNotPreparedAgainAfterTheCancel() async throws {
        let (pair, ino) = try await placeholderOnB("u.bin", seed: 29, chunkDelay: .seconds(3))
        let reader = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        defer { pair.b.fs.fileIO.release(reader) }
        let wait = try #require(try pair.b.fs.reads.prepareRead(reader, offset: 0, count: 4096, processName: { nil }))
        let outcomes = Mutex<[FSError?]>([])
        wait.onEnd { result in outcomes.withLock { $0.append(result) } }
        #expect(wait.end(.io(EINTR)), "the interrupt answers the read")

        let truncating = try pair.b.fs.open(ino, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        pair.b.fs.fileIO.release(truncating)
        try await Task.sleep(for: .milliseconds(300))  // scenario: time for a second answer that must not come
        #expect(outcomes.withLock { $0 } == [.io(EINTR)], "answered once, with EINTR")
        #expect(try pair.b.fs.getattr(ino).size == 0)
    }
}
