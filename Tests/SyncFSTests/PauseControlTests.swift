import SyncBackend
import Testing

@testable import SyncFS

/// The control socket's `pause` and `resume` (`PauseControl`): each answers only once the
/// `paused` fact is committed, so a pause the user was told of survives a crash right after.
@Suite struct PauseControlTests {
    @Test func pauseAndResumeAnswerOnlyOnceTheirStateIsCommitted() throws {
        // A flusher this slow leaves the fact uncommitted unless the answer commits it.
        let fixture = try FileSystemFixture(batchDelay: slowBatchDelay)
        let engine = SyncEngine(fileSystem: fixture.fs, container: InMemoryContainer(), logger: .init(label: "t"))
        let commands = ControlCommands(engine: engine)
        var pause = ControlRequest(.pause)
        pause.pauseSeconds = 3600
        let paused = commands.answer(pause)
        #expect(paused.error == nil && paused.status?.paused != nil, "\(paused)")
        #expect(fixture.fs.store.queuedChanges == 0, "answered before the pause was committed")
        let resumed = commands.answer(ControlRequest(.resume))
        #expect(resumed.error == nil && resumed.action?.files == 1, "\(resumed)")
        #expect(fixture.fs.store.queuedChanges == 0, "answered before the resume was committed")
    }
}
