import Foundation
import Glibc
import SyncBackend
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// A reader's wait without a thread (`Hydration.wait`, `ChunkWait`): it ends
/// exactly once — when its chunks are stored, when the download fails or is cancelled, or when
/// the reader is interrupted — and its action runs once, with that outcome.
@Suite struct ChunkWaitTests {
    /// A download of three chunks of 4 bytes into a temporary file.
    private final class Fixture {
        let directory: TemporaryDirectory
        let descriptor: Int32
        let hydration: Hydration

        init() throws {
            directory = try TemporaryDirectory("chunk-wait")
            descriptor = open(directory.path + "/download", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0)
            let manifest = (0..<3).map { index in
                [UInt8](repeating: UInt8(index), count: 4).withUnsafeBytes {
                    ChunkRef(hash: ChunkCodec.hash($0), length: 4)
                }
            }
            hydration = Hydration(manifest: manifest, descriptor: descriptor, resumes: false)
        }

        func chunk(_ index: Int) -> [UInt8] { [UInt8](repeating: UInt8(index), count: 4) }

        deinit { close(descriptor) }
    }

    /// Records each outcome an action is given.
    private final class Outcomes: Sendable {
        let received = Mutex<[FSError?]>([])
        func record(_ outcome: FSError?) { received.withLock { $0.append(outcome) } }
        var all: [FSError?] { received.withLock { $0 } }
    }

    @Test func aWaitEndsWhenEveryChunkOfItsRangeIsStored() throws {
        let fixture = try Fixture()
        let wait = try #require(try fixture.hydration.wait(offset: 2, count: 4))  // chunks 0 and 1
        #expect(wait.chunks == 0..<2)
        let outcomes = Outcomes()
        wait.onEnd { outcomes.record($0) }
        // The first missing chunk of the range is fetched first.
        #expect(fixture.hydration.nextChunk() == 0)
        #expect(fixture.hydration.store(0, fixture.chunk(0)))
        #expect(outcomes.all.isEmpty, "chunk 1 is still missing")
        #expect(fixture.hydration.store(1, fixture.chunk(1)))
        #expect(outcomes.all.count == 1)
        #expect(outcomes.all.first == .some(nil))
        #expect(try fixture.hydration.wait(offset: 0, count: 8) == nil, "bytes present: no wait")
    }

    @Test func aWaitThatEndedBeforeItsActionWasSetRunsItAtOnce() throws {
        let fixture = try Fixture()
        let wait = try #require(try fixture.hydration.wait(offset: 8, count: 4))
        #expect(fixture.hydration.store(2, fixture.chunk(2)))
        let outcomes = Outcomes()
        wait.onEnd { outcomes.record($0) }
        #expect(outcomes.all.count == 1)
        #expect(outcomes.all.first == .some(nil))
    }

    @Test func anInterruptedWaitEndsOnceAndTheDownloadGoesOnForOthers() throws {
        let fixture = try Fixture()
        let interrupted = try #require(try fixture.hydration.wait(offset: 0, count: 4))
        let other = try #require(try fixture.hydration.wait(offset: 0, count: 4))
        let first = Outcomes()
        let second = Outcomes()
        interrupted.onEnd { first.record($0) }
        other.onEnd { second.record($0) }
        #expect(interrupted.end(.io(EINTR)))
        #expect(!interrupted.end(nil), "a wait ends once")
        #expect(first.all == [.io(EINTR)])
        #expect(fixture.hydration.isWanted, "another reader still waits")
        #expect(fixture.hydration.store(0, fixture.chunk(0)))
        #expect(first.all == [.io(EINTR)], "the interrupted reader is not answered twice")
        #expect(second.all == [nil])
    }

    /// A reader's answer stands for the wait of the download under way (`prepareRead`, which may
    /// replace a cancelled download's wait): an interrupted answer must not leave that wait
    /// counting as a reader, or the download would go on for nobody after the last close.
    @Test func anAnswerThatEndsEndsTheWaitItStandsFor() throws {
        let fixture = try Fixture()
        let wait = try #require(try fixture.hydration.wait(offset: 4, count: 4))
        #expect(fixture.hydration.nextChunk() == 1, "the fetcher took the chunk: only the wait wants it now")
        let answer = ChunkWait(chunks: wait.chunks)
        answer.standFor(wait)
        let inner = Outcomes()
        wait.onEnd { inner.record($0) }
        #expect(fixture.hydration.isWanted)
        #expect(answer.end(.io(EINTR)))
        #expect(inner.all == [.io(EINTR)], "the wait ended with the answer")
        #expect(!fixture.hydration.isWanted, "nobody waits for the download any more")
    }

    @Test func standingForAWaitAfterTheAnswerEndedEndsItAtOnce() throws {
        let fixture = try Fixture()
        let wait = try #require(try fixture.hydration.wait(offset: 0, count: 4))
        let answer = ChunkWait(chunks: wait.chunks)
        #expect(answer.end(.io(EINTR)))
        answer.standFor(wait)
        #expect(wait.hasEnded)
        #expect(!answer.end(nil), "the answer itself ends once")
    }

    @Test func aFailedOrCancelledDownloadEndsEveryWaitWithItsError() throws {
        let failing = try Fixture()
        let outcomes = Outcomes()
        let waits = try (0..<3).map { index in
            try #require(try failing.hydration.wait(offset: Int64(index * 4), count: 4))
        }
        for wait in waits { wait.onEnd { outcomes.record($0) } }
        #expect(failing.hydration.fail(.containerUnreachable))
        #expect(outcomes.all == [.containerUnreachable, .containerUnreachable, .containerUnreachable])
        #expect(throws: FSError.containerUnreachable) { _ = try failing.hydration.wait(offset: 0, count: 1) }

        let cancelled = try Fixture()
        let cancelledOutcomes = Outcomes()
        try #require(try cancelled.hydration.wait(offset: 0, count: 1)).onEnd { cancelledOutcomes.record($0) }
        cancelled.hydration.cancel()
        #expect(cancelledOutcomes.all == [.stale])
        #expect(throws: FSError.stale) { _ = try cancelled.hydration.wait(offset: 0, count: 1) }
    }
}
