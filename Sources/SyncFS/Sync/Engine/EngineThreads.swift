import Foundation

/// The engine's threads: each started with a name, all joined at once at `stop` — a join on
/// their ends, never a poll of flags.
final class EngineThreads: Sendable {
    private let running = DispatchGroup()

    init() {}

    /// Runs `body` on a new thread named `name`.
    func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        running.enter()
        let thread = Thread { [running] in
            body()
            running.leave()
        }
        thread.name = name
        thread.start()
    }

    /// Waits until every started thread has ended, at most `limit`. False if one has not.
    func join(within limit: Duration) -> Bool {
        running.wait(timeout: .now() + .nanoseconds(Int(limit.inNanoseconds))) == .success
    }
}
