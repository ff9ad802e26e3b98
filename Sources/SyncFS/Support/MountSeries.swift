import CoreMetrics

/// The mount's series recorded where they happen (the rest are sampled from the status at each
/// scrape: `MountMetrics`). Made at their first use, which is after `mount --metrics-listen`
/// bootstrapped the registry; without it they are swift-metrics' no-ops.
enum MountSeries {
    static let propagationLabel = "syncfs_mount_propagation_seconds"

    /// From when a local change was ready to upload (its quiet delay over, or its retry due) to
    /// the container's commit of it.
    static let propagation = Timer(label: propagationLabel)

    /// From 10 ms to 10 min.
    static let propagationBuckets: [Duration] = [
        .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300),
        .seconds(600),
    ]

    /// Records the propagation of changes that were ready at `readyAt` (ns, the outbox's clock)
    /// and committed at `now`.
    static func committed(readyAt: [Int64], now: Int64) {
        for ready in readyAt { propagation.recordNanoseconds(max(0, now - ready)) }
    }
}
