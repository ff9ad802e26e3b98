import Foundation
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// `HistoryService.waitUntilApplied`, how `restore` waits for the follower to show what it
/// committed: it ends once the follower is done with the version, or at its timeout.
@Suite struct RestoreApplyWaitTests {
    @Test func theWaitEndsWhenTheFollowerIsDoneWithTheVersionAndTimesOutBefore() throws {
        let fixture = try FileSystemFixture()
        let engine = SyncEngine(fileSystem: fixture.fs, container: InMemoryContainer(), logger: .init(label: "t"))
        #expect(!engine.history.waitUntilApplied(4, within: .milliseconds(50)), "nothing handled yet")
        let waited = Thread.detachNewThreadWithResult { engine.history.waitUntilApplied(4, within: .seconds(600)) }
        #expect(waitUntil { fixture.fs.live.feedHandled.waiting == 1 }, "the thread is inside its wait")
        fixture.fs.live.feedHandled.advance(to: 3)
        fixture.fs.live.feedHandled.advance(to: 4)
        #expect(try waited.value(within: .seconds(30)), "ended by the follower's note, not the 600 s timeout")
    }

    /// A paused follower applies nothing until `resume`: the wait ends at once, not applied.
    @Test func onAPausedMountTheWaitEndsAtOnce() throws {
        let fixture = try FileSystemFixture()
        let engine = SyncEngine(fileSystem: fixture.fs, container: InMemoryContainer(), logger: .init(label: "t"))
        engine.pause.pause(PauseState(until: nil, scope: .sync))
        let waited = Thread.detachNewThreadWithResult { engine.history.waitUntilApplied(4, within: .seconds(600)) }
        #expect(try waited.value(within: .seconds(30)) == false, "ended at once, not by the 600 s timeout")
    }

    /// With a real follower: a version committed by another mount is in this mount's tree when
    /// the wait for it returns.
    @Test func aVersionWaitedForIsInTheTreeWhenTheWaitReturns() async throws {
        let pair = try SyncedPair()
        let ino = try pair.a.makeFile("note.txt", contents: Array("v1".utf8))
        let id = try #require(pair.a.fileID(of: ino))
        try await eventually("note.txt in the container") { try await pair.container.entry(id) != nil }
        let version = try #require(try await pair.container.entry(id)).version
        #expect(pair.engineB.history.waitUntilApplied(version, within: .seconds(30)))
        #expect(try pair.b.childNames() == ["note.txt"])
    }
}
