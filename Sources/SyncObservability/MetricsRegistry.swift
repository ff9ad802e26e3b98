import CoreMetrics
import Prometheus

/// The process's one metrics registry: `bootstrap` points swift-metrics at a Prometheus
/// registry, so every `Counter`, `Gauge`, `Recorder` and `Timer` made afterwards (in SyncServer,
/// SyncFS, SyncS3, SyncPostgres) is a series of the scrape. Without it swift-metrics keeps its
/// no-op handlers and metrics cost next to nothing.
public enum MetricsRegistry {
    /// Bootstraps swift-metrics once per process (a second call is a programming error, as in
    /// swift-metrics) and returns the registry the scrape renders. `buckets` overrides the
    /// default latency buckets of the named timers.
    public static func bootstrap(buckets: [String: [Duration]] = [:]) -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = defaultLatencyBuckets
        factory.durationHistogramBuckets = buckets
        MetricsSystem.bootstrap(factory)
        return registry
    }

    /// From 1 ms to 10 s: requests, commits, storage calls.
    public static let defaultLatencyBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        .seconds(10),
    ]
}
