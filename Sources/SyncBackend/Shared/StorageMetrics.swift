import CoreMetrics

/// One call to the storage behind a server's containers (a PostgreSQL query, an S3 request),
/// timed from `init` to `ended`: `syncfs_server_storage_duration_seconds` and, for a failure,
/// `syncfs_server_storage_errors_total`, both by `backend` (`postgres`, `s3`) and `operation`
/// (`query`; the S3 request's method). A no-op unless a metrics registry was bootstrapped
/// (`serve --metrics-listen`; doc/METRICS.md).
public struct StorageMetrics: Sendable {
    private let started = ContinuousClock.now
    private let dimensions: [(String, String)]

    public init(backend: String, operation: String) {
        dimensions = [("backend", backend), ("operation", operation)]
    }

    /// Records the call's latency, and an error if it `failed` (an answer that is not the
    /// storage's "not found" or success, or no answer).
    public func ended(failed: Bool) {
        let elapsed = ContinuousClock.now - started
        let (seconds, attoseconds) = elapsed.components
        Timer(label: "syncfs_server_storage_duration_seconds", dimensions: dimensions)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        if failed { Counter(label: "syncfs_server_storage_errors_total", dimensions: dimensions).increment() }
    }
}
