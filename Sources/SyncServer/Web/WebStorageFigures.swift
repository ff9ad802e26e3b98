import SyncBackend
import Synchronization

/// The storage figures the containers list shows (`CollectableContainer.storageStats`), measured
/// at most once a minute per container: counting a container's entries and chunks is work that
/// grows with the container, which a page everyone opens must not repeat on every request.
final class WebStorageFigures: Sendable {
    private struct Measured {
        let stats: StorageStats
        let at: ContinuousClock.Instant
    }

    private let measured = Mutex<[String: Measured]>([:])
    private let maximumAge: Duration

    init(maximumAge: Duration = .seconds(60)) {
        self.maximumAge = maximumAge
    }

    /// The figures of container `name`, measured now if the last measurement is older than the
    /// maximum age; nil if it keeps no storage accounting or cannot be measured now.
    func stats(of name: String, _ container: any Container) async -> StorageStats? {
        let now = ContinuousClock.now
        if let known = measured.withLock({ $0[name] }), now - known.at < maximumAge { return known.stats }
        guard let accounting = container as? any CollectableContainer else { return nil }
        do {
            let stats = try await accounting.storageStats()
            measured.withLock { $0[name] = Measured(stats: stats, at: now) }
            return stats
        } catch {
            return measured.withLock { $0[name] }?.stats
        }
    }
}
