import SyncBackend
import Synchronization

/// Whether the engine runs, shared by its threads: each loop checks `isRunning`, and every
/// pause between attempts is `pause(_:)`, which `stop()` ends at once (no polling).
final class EngineRun: Sendable {
    private let running = Atomic<Bool>(true)
    private let pauses = StopSignal()

    init() {}

    var isRunning: Bool { running.load(ordering: .acquiring) }

    /// Sleeps `duration`, or less if the engine stops meanwhile.
    func pause(_ duration: Duration) { pauses.sleep(for: duration) }

    func stop() {
        running.store(false, ordering: .releasing)
        pauses.stop()
    }
}
