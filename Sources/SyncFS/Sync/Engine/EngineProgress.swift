import Synchronization

/// What the engine's threads report for `status`: the bytes and chunks moved, the last
/// container failure, and whether the follower caught up with the feed at its last look. Each
/// thread writes its part; `status` and the first attach read them.
final class EngineProgress: Sendable {
    private struct State {
        var totals = ContentTransfer.Totals()
        var lastFailure: String?
        var feedCaughtUp = false
    }

    private let state = Mutex(State())

    init() {}

    func add(_ totals: ContentTransfer.Totals) { state.withLock { $0.totals.add(totals) } }

    /// Records the last container failure (nil: a call succeeded), shown by `status`.
    func noteFailure(_ failure: String?) { state.withLock { $0.lastFailure = failure } }

    func markCaughtUp(_ value: Bool) { state.withLock { $0.feedCaughtUp = value } }

    /// The last container failure seen by any engine thread, cleared by a success.
    var lastFailure: String? { state.withLock { $0.lastFailure } }

    /// The follower applied everything the feed had at its last look.
    var feedCaughtUp: Bool { state.withLock { $0.feedCaughtUp } }

    /// All three at once.
    var snapshot: (totals: ContentTransfer.Totals, lastFailure: String?, feedCaughtUp: Bool) {
        state.withLock { ($0.totals, $0.lastFailure, $0.feedCaughtUp) }
    }
}
