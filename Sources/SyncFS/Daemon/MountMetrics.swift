import CoreMetrics
import Synchronization

/// The mount's series (doc/METRICS.md) that are read from the engine's status when the registry
/// is scraped (`sample`), and the operation counts of the FUSE session (`FuseOperationTiming`).
/// Made by `mount --metrics-listen` after the registry's bootstrap and handed to the daemon
/// (`MountConfiguration.metrics`), which attaches its engine and session while they run. No
/// label names a file, a path or the container: the mount's series carry none but `operation`.
public final class MountMetrics: Sendable {
    private struct Attached {
        var engine: SyncEngine?
        var timing: FuseOperationTiming?
        var uploaded: Int64 = 0
        var downloaded: Int64 = 0
    }

    private let attached = Mutex(Attached())
    private let queueEntries = Gauge(label: "syncfs_mount_queue_entries")
    private let queueBytes = Gauge(label: "syncfs_mount_queue_bytes")
    private let uploaded = Counter(label: "syncfs_mount_uploaded_bytes_total")
    private let downloaded = Counter(label: "syncfs_mount_downloaded_bytes_total")
    private let cacheBytes = Gauge(label: "syncfs_mount_cache_bytes")
    private let cacheBudget = Gauge(label: "syncfs_mount_cache_budget_bytes")
    private let conflicts = Gauge(label: "syncfs_mount_conflicts_unresolved")
    private let failing = Gauge(label: "syncfs_mount_failing_entries")
    private let guardHeld = Gauge(label: "syncfs_mount_delete_guard_held")
    private let guardWaiting = Gauge(label: "syncfs_mount_delete_guard_waiting_changes")
    private let online = Gauge(label: "syncfs_mount_online")
    private let upToDate = Gauge(label: "syncfs_mount_up_to_date")
    private let paused = Gauge(label: "syncfs_mount_paused")

    /// Makes every series at once (after the bootstrap), so that a scrape lists them all.
    public init() {
        _ = MountSeries.propagation
        for gauge in [queueEntries, queueBytes, cacheBytes, cacheBudget, conflicts, failing, guardHeld, guardWaiting] {
            gauge.record(0)
        }
        for gauge in [online, upToDate, paused] { gauge.record(0) }
        uploaded.increment(by: 0)
        downloaded.increment(by: 0)
    }

    /// The latency buckets of the mount's histograms, for the registry's bootstrap.
    public static let buckets: [String: [Duration]] = [
        FuseOperationTiming.durationLabel: FuseOperationTiming.buckets,
        MountSeries.propagationLabel: MountSeries.propagationBuckets,
    ]

    /// The session's operation timing, made for the daemon.
    func makeTiming() -> FuseOperationTiming {
        let timing = FuseOperationTiming()
        attached.withLock { $0.timing = timing }
        return timing
    }

    /// The engine whose status is sampled from now on (nil: none any more).
    func attach(_ engine: SyncEngine?) {
        attached.withLock { $0.engine = engine }
    }

    /// Reads the status into the gauges and counters (called before each scrape, on the
    /// listener's thread). The status is read holding the lock `attach` takes, so the daemon's
    /// `attach(nil)` waits for a reading in progress before the state is closed.
    public func sample() {
        let timing = attached.withLock { $0.timing }
        timing?.publishCounts()
        guard let status = attached.withLock({ $0.engine?.status() }) else { return }
        queueEntries.record(status.pendingEntries)
        queueBytes.record(status.pendingBytes)
        cacheBytes.record(status.cachedBytes)
        cacheBudget.record(status.cacheBudget ?? 0)
        conflicts.record(status.conflicts)
        failing.record(status.failing.count)
        guardHeld.record(status.massDeleteGuard?.held == true ? 1 : 0)
        guardWaiting.record(status.massDeleteGuard?.waiting ?? 0)
        online.record(status.online ? 1 : 0)
        upToDate.record(status.upToDate == true ? 1 : 0)
        paused.record(status.paused == nil ? 0 : 1)
        let (up, down) = attached.withLock { state in
            defer {
                state.uploaded = max(state.uploaded, status.bytesUploaded)
                state.downloaded = max(state.downloaded, status.bytesDownloaded)
            }
            return (status.bytesUploaded - state.uploaded, status.bytesDownloaded - state.downloaded)
        }
        if up > 0 { uploaded.increment(by: up) }
        if down > 0 { downloaded.increment(by: down) }
    }
}
