import ArgumentParser
import Logging
import SyncObservability

/// `--log-format` and `--metrics-listen`, shared by `serve` and `mount` (doc/CLI.md, "Logs and
/// metrics"; doc/METRICS.md).
struct ObservabilityOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("Log lines as text (the default) or json: one JSON object per line.", valueName: "format"))
    var logFormat: String = LogFormat.text.rawValue

    @Option(
        help: ArgumentHelp(
            "Serve Prometheus metrics at http://ADDR/metrics: PORT or :PORT is loopback; HOST:PORT listens on HOST.",
            discussion:
                "Off by default. The scrape has no authentication: name a non-loopback HOST only on a trusted network.",
            valueName: "addr"))
    var metricsListen: String?

    func validate() throws {
        guard LogFormat(rawValue: logFormat) != nil else {
            throw ValidationError("--log-format must be \(LogFormat.choices), not '\(logFormat)'")
        }
        if let metricsListen, MetricsListenAddress(parsing: metricsListen) == nil {
            throw ValidationError(
                "--metrics-listen must be PORT, :PORT, HOST:PORT or [IPv6]:PORT with a port 0...65535, not '\(metricsListen)'"
            )
        }
    }

    /// Routes the process's logs to standard error in the chosen format.
    func bootstrapLogging(level: Logger.Level) {
        (LogFormat(rawValue: logFormat) ?? .text).bootstrap(level: level)
    }

    /// With `--metrics-listen`: bootstraps swift-metrics (before any series is made) and serves
    /// the scrape; logs where. Nil without it. `buckets` are latency buckets of named timers;
    /// `afterBootstrap` makes what must be made after the bootstrap and returns what runs before
    /// each rendering.
    func startMetrics(
        logger: Logger, buckets: [String: [Duration]] = [:],
        afterBootstrap: () -> @Sendable () -> Void = { {} }
    ) throws -> MetricsEndpoint? {
        guard let metricsListen, let address = MetricsListenAddress(parsing: metricsListen) else { return nil }
        let registry = MetricsRegistry.bootstrap(buckets: buckets)
        let beforeScrape = afterBootstrap()
        let endpoint: MetricsEndpoint
        do {
            endpoint = try MetricsEndpoint.start(at: address, registry: registry, beforeScrape: beforeScrape)
        } catch {
            throw MetricsListenFailure(address: address, reason: "\(error)")
        }
        if !address.isLoopback {
            logger.warning(
                "metrics on \(address), not a loopback address: anyone who reaches it can read them (no authentication)"
            )
        }
        logger.info("serving metrics at \(endpoint.url)")
        return endpoint
    }

    /// The options as the background mount passes them on to its daemon.
    var commandLine: [String] {
        ["--log-format", logFormat] + (metricsListen.map { ["--metrics-listen", $0] } ?? [])
    }
}

/// `--metrics-listen`'s address could not be bound.
struct MetricsListenFailure: Error, CustomStringConvertible {
    let address: MetricsListenAddress
    let reason: String
    var description: String { "cannot serve metrics on \(address): \(reason)" }
}
