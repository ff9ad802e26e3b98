import Foundation
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// The engine's pauses between attempts run on the `EngineSleeper` it is given: a test moves
/// them on by hand, without real time, and `stop()` ends them.
@Suite struct EngineSleeperTests {
    /// After a failed round the follower pauses `followerFailurePause` on the engine's clock: the
    /// container is back, but the feed is read again only once the clock moved the whole pause.
    @Test func theFollowersFailurePauseEndsWhenTheClockMovesOn() async throws {
        let (fixture, engine, container, sleeper) = try Self.startInOutage()
        defer { withExtendedLifetime(fixture) { engine.stop() } }
        try await eventually("the follower failed and pauses") {
            sleeper.sleeping == [EngineDelay.followerFailurePause] && engine.progress.lastFailure != nil
        }
        container.endOutage()
        sleeper.advance(by: EngineDelay.followerFailurePause - .milliseconds(1))
        #expect(sleeper.sleeping == [EngineDelay.followerFailurePause], "a millisecond of the pause is left")
        #expect(!engine.progress.feedCaughtUp)
        sleeper.advance(by: .milliseconds(1))
        try await eventually("the follower read the feed again") {
            engine.progress.feedCaughtUp && engine.progress.lastFailure == nil
        }
    }

    /// A pause the clock never ends is ended by `stop()`: the engine's threads are joined.
    @Test func stopEndsAPauseTheClockWouldNotEnd() async throws {
        let (fixture, engine, _, sleeper) = try Self.startInOutage()
        try await eventually("the follower pauses") { !sleeper.sleeping.isEmpty }
        let started = ContinuousClock.now
        withExtendedLifetime(fixture) { engine.stop() }
        #expect(sleeper.sleeping.isEmpty, "stop() joined the thread that was pausing")
        #expect(ContinuousClock.now - started < .seconds(10), "not the engine's 10 s join deadline")
    }

    /// An engine on a manual sleeper, started with its container away (and its folder, which the
    /// caller keeps while the engine runs).
    private static func startInOutage() throws
        -> (FileSystemFixture, SyncEngine, FaultInjectingContainer, ManualSleeper)
    {
        let fixture = try FileSystemFixture()
        let container = FaultInjectingContainer(InMemoryContainer())
        container.startOutage()
        let sleeper = ManualSleeper()
        let engine = SyncEngine(
            fileSystem: fixture.fs, container: container, logger: .init(label: "t"), sleeper: sleeper)
        engine.start()
        return (fixture, engine, container, sleeper)
    }
}
