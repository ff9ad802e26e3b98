import CoreMetrics
import HTTPTypes

/// The server's series (doc/METRICS.md lists each with its type, labels and meaning). They are
/// made through swift-metrics, so they cost a no-op call unless `serve --metrics-listen`
/// bootstrapped a registry before the server started. Labels never hold a path, a file name or a
/// token: a request is named by its endpoint's template (`Endpoint.pathTemplate`, `other` for
/// anything else) and its method; only the per-container quota series name a container.
enum ServerMetrics {
    // The fixed series, made at the first use after the bootstrap (`prepare`).
    static let committedChanges = Counter(
        label: "syncfs_server_commit_changes_total", dimensions: [("result", "committed")])
    static let refusedChanges = Counter(
        label: "syncfs_server_commit_changes_total", dimensions: [("result", "refused")])
    static let commitRequests = Counter(label: "syncfs_server_commit_requests_total")
    static let chunkBytesIn = Counter(label: "syncfs_server_chunk_bytes_total", dimensions: [("direction", "in")])
    static let chunkBytesOut = Counter(label: "syncfs_server_chunk_bytes_total", dimensions: [("direction", "out")])
    static let openLongPolls = Gauge(label: "syncfs_server_long_polls_open")
    static let gcRunsSucceeded = Counter(label: "syncfs_server_gc_runs_total", dimensions: [("result", "ok")])
    static let gcRunsFailed = Counter(label: "syncfs_server_gc_runs_total", dimensions: [("result", "failed")])
    static let gcBytesFreed = Counter(label: "syncfs_server_gc_freed_bytes_total")

    /// Whether a registry was bootstrapped before the first look (`serve --metrics-listen` does it
    /// before the server starts): without one, a request's route is not worked out twice.
    static let isEnabled = !(MetricsSystem.factory is NOOPMetricsHandler)

    /// Makes the fixed series now, so that a scrape shows them at 0 before anything happened.
    static func prepare() {
        _ = (committedChanges, refusedChanges, commitRequests, chunkBytesIn, chunkBytesOut)
        _ = (gcRunsSucceeded, gcRunsFailed, gcBytesFreed)
        openLongPolls.record(0)
    }

    /// One answered request: its count by route, method and status, and its latency by route and
    /// method (from the responder's start to the response's head; a long poll's wait included).
    static func answered(method: HTTPRequest.Method, path: String, status: Int, elapsed: Duration) {
        guard isEnabled else { return }
        let methodName = knownMethods.contains(method.rawValue) ? method.rawValue : "other"
        let route: String
        if case .endpoint(let endpoint, _) = RouteResolution.resolve(method: method.rawValue, path: path) {
            route = endpoint.pathTemplate
        } else {
            route = "other"
        }
        Counter(
            label: "syncfs_server_requests_total",
            dimensions: [("route", route), ("method", methodName), ("status", String(status))]
        ).increment()
        Timer(label: "syncfs_server_request_duration_seconds", dimensions: [("route", route), ("method", methodName)])
            .recordNanoseconds(elapsed.inNanoseconds)
    }

    private static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]

    /// A commit request's changes: how many were committed and how many refused.
    static func commits(changes: Int, committed: Int) {
        commitRequests.increment()
        committedChanges.increment(by: committed)
        refusedChanges.increment(by: changes - committed)
    }

    /// The stored bytes of container `name` as its quota counts them, and its quota.
    static func quotaUse(_ name: String, used: Int64, limit: Int64) {
        Gauge(label: "syncfs_server_quota_used_bytes", dimensions: [("container", name)]).record(used)
        Gauge(label: "syncfs_server_quota_limit_bytes", dimensions: [("container", name)]).record(limit)
    }

    /// One container's scheduled collection.
    static func collected(bytesFreed: Int64?) {
        guard let bytesFreed else { return gcRunsFailed.increment() }
        gcRunsSucceeded.increment()
        gcBytesFreed.increment(by: bytesFreed)
    }
}

extension Duration {
    /// Whole nanoseconds (saturating), for swift-metrics' timers.
    fileprivate var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds < Int64.max / 1_000_000_000 else { return .max }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
