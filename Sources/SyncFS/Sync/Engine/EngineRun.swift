import Synchronization

/// Whether the engine runs, shared by its threads: each loop checks `isRunning`, and every
/// pause between attempts is `pause(_:)`, on the engine's one `EngineSleeper`, which `stop()`
/// ends at once (no polling).
final class EngineRun: Sendable {
    private let running = Atomic<Bool>(true)
    private let sleeper: any EngineSleeper

    init(sleeper: any EngineSleeper) { self.sleeper = sleeper }

    var isRunning: Bool { running.load(ordering: .acquiring) }

    /// Sleeps `duration` on the engine's sleeper, or less if the engine stops meanwhile.
    func pause(_ duration: Duration) { sleeper.sleep(for: duration) }

    func stop() {
        running.store(false, ordering: .releasing)
        sleeper.stop()
    }
}
