import SyncBackend
import Synchronization

/// What one server says it serves beyond the first version of the protocol
/// (`ContainerInfo.features`, `WireProtocol.Feature`), as an `HTTPContainer` last learnt it.
///
/// - Unknown until a call that needs it asks (`GET .../NAME`); then kept.
/// - A server that did not list a feature is believed for `recheckAfter`, then asked again (it
///   may have been upgraded meanwhile).
/// - `forget` (an endpoint the server listed answered as an older server would, `404`/`405`):
///   the next call that needs it asks again.
final class ServerFeatures: Sendable {
    static let recheckAfter: Duration = .seconds(300)

    private struct Known {
        let features: Set<String>
        let at: ContinuousClock.Instant
    }

    private let known = Mutex<Known?>(nil)

    /// Whether the server listed `feature` when it was last asked; nil: ask it (never asked,
    /// forgotten, or not listed and asked more than `recheckAfter` ago).
    func offers(_ feature: String, now: ContinuousClock.Instant = .now) -> Bool? {
        known.withLock { known in
            guard let known else { return nil }
            if known.features.contains(feature) { return true }
            return now - known.at < Self.recheckAfter ? false : nil
        }
    }

    /// The server's answer: `features` (nil from a server older than the list: none).
    func remember(_ features: [String]?, now: ContinuousClock.Instant = .now) {
        known.withLock { $0 = Known(features: Set(features ?? []), at: now) }
    }

    func forget() {
        known.withLock { $0 = nil }
    }
}
