import ArgumentParser
import Dispatch
import Foundation
import Glibc
import Logging
import SyncBackend
import SyncFS
import SyncObservability
import SyncServer
import SyncServerPostgres
import Synchronization

/// `syncfs-mount serve --root DIR --listen HOST:PORT`: serves the containers under DIR over HTTP
/// (or HTTPS with `--tls-cert`/`--tls-key`) until SIGINT or SIGTERM (doc/CLI.md, doc/PROTOCOL.md).
/// With `--database URL --chunk-store LOCATION` instead of `--root`, the containers and tokens
/// are a PostgreSQL store's (`DatabaseBackend`, `DatabaseTokens`, doc/DEPLOY.md); `--tokens DIR`
/// keeps reading tokens from a token directory, as before the database held them.
///
/// Readiness signal for scripts: the one line `listening on http(s)://HOST:PORT` on standard
/// output (unbuffered; the real port when 0 was asked). Logs go to standard error. Runs with umask
/// 0o077: the chunk files and directories it makes are its user's alone.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the containers under a directory over HTTP(S).",
        discussion: """
            Every directory ROOT/NAME holding a container is served as https://HOST:PORT/NAME to \
            clients with a token for it (see `syncfs-mount token`). Prints `listening on URL` \
            once bound; stops gracefully on SIGINT or SIGTERM. With --database URL --chunk-store \
            LOCATION instead of --root, the containers and tokens are in PostgreSQL (made by \
            server-init) and their chunks in an S3 bucket or a directory (see doc/DEPLOY.md).
            """
    )

    @Option(help: ArgumentHelp("The directory holding the containers (must exist).", valueName: "dir"))
    var root: String?

    @Option(
        help: ArgumentHelp(
            "Serve the containers of this PostgreSQL database instead (made by server-init).", valueName: "url"))
    var database: String?

    @Option(
        name: .customLong("chunk-store"),
        help: ArgumentHelp(
            "With --database: s3://BUCKET[/PREFIX]?endpoint=URL&region=R, or a chunk directory.",
            valueName: "location"))
    var chunkStore: String?

    @Option(
        help: ArgumentHelp(
            "With --database: read tokens from this directory's token database, not the database's.",
            valueName: "dir"))
    var tokens: String?

    @Option(
        help: ArgumentHelp(
            "Address to listen on: HOST:PORT or [IPv6]:PORT; port 0 picks a free one.", valueName: "host:port"))
    var listen: String

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain: serve HTTPS.", valueName: "file"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    @Option(
        name: .customLong("gc-every"),
        help: ArgumentHelp(
            "Collect the containers' garbage this often (e.g. 6h, 30m, 1d; at least 60s). Default: never.",
            valueName: "duration"))
    var gcEvery: String?

    @Option(
        name: .customLong("gc-grace"),
        help: ArgumentHelp("With --gc-every: keep chunks stored less than this long ago.", valueName: "seconds"))
    var gcGrace: Int?

    @Option(
        help: ArgumentHelp(
            "A container's storage quota (stored bytes, history included), e.g. box=10G; repeatable.",
            valueName: "name=size"))
    var quota: [String] = []

    @Option(help: ArgumentHelp("The storage quota of every container without its own --quota.", valueName: "size"))
    var defaultQuota: String?

    @OptionGroup(title: "Bandwidth limits")
    var bandwidthOptions: ServeBandwidthOptions

    @Option(
        help: ArgumentHelp(
            "Keep audit lines this many days (1-36500); older ones are removed at start and daily.",
            valueName: "days"))
    var auditDays = 365

    @Option(help: "Log level: trace, debug (every request), info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @OptionGroup(title: "Logs and metrics")
    var observability: ObservabilityOptions

    @Flag(help: "Stop gracefully when standard input reaches end-of-file (for test runners).")
    var lifeline = false

    func validate() throws {
        try LocationCheck.check(
            LocationCheck.directoryProblem(root, option: "--root"),
            LocationCheck.directoryProblem(tokens, option: "--tokens"), LocationCheck.chunkStoreProblem(chunkStore))
        if let problem = ServeBackendChoice.problem(
            root: root, database: database, chunkStore: chunkStore, tokens: tokens)
        {
            throw ValidationError(problem)
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError(
                "unknown log level '\(logLevel)'; use trace, debug, info, notice, warning, error or critical")
        }
        guard ListenAddress(parsing: listen) != nil else {
            throw ValidationError("--listen must be HOST:PORT or [IPv6]:PORT with a port 0...65535, not '\(listen)'")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        if lifeline, let problem = Lifeline.problemAtStart() { throw problem }
        _ = try collection()
        _ = try quotas()
    }

    /// The `--quota`/`--default-quota` settings (`QuotaSettings`).
    func quotas() throws -> QuotaSettings {
        func size(_ text: String, _ option: String) throws -> Int64 {
            guard case .bytes(let bytes)? = CacheSize(parsing: text) else {
                throw ValidationError("\(option) needs a size such as 500M, 10G or 1T, not '\(text)'")
            }
            return bytes
        }
        var settings = QuotaSettings(defaultLimit: try defaultQuota.map { try size($0, "--default-quota") })
        for item in quota {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, ContainerName.isValid(parts[0]) else {
                throw ValidationError("--quota needs NAME=SIZE with a container name, not '\(item)'")
            }
            guard settings.perContainer[parts[0]] == nil else {
                throw ValidationError("--quota names the container '\(parts[0])' twice")
            }
            settings.perContainer[parts[0]] = try size(parts[1], "--quota \(parts[0])")
        }
        return settings
    }

    /// The `--gc-every`/`--gc-grace` schedule, if asked for (`CollectionSchedule`).
    func collection() throws -> CollectionSchedule.Settings? {
        guard let gcEvery else {
            if gcGrace != nil { throw ValidationError("--gc-grace goes with --gc-every") }
            return nil
        }
        guard let interval = CollectionSchedule.Settings.duration(parsing: gcEvery) else {
            throw ValidationError("--gc-every must be a duration such as 90s, 30m, 6h or 1d, not '\(gcEvery)'")
        }
        let grace = gcGrace ?? Int(CollectionSchedule.Settings.defaultGrace.components.seconds)
        let graces = 0...RetentionPolicy.dayLimits.upperBound * 86_400
        guard graces.contains(grace) else {
            throw ValidationError("--gc-grace must be a number of seconds from 0 to \(graces.upperBound), not \(grace)")
        }
        let settings = CollectionSchedule.Settings(interval: interval, grace: .seconds(grace))
        if let problem = settings.problem { throw ValidationError(problem) }
        return settings
    }

    func run() throws {
        makeFilesPrivate()
        Self.resetTerminationSignals()
        observability.bootstrapLogging(level: Logger.Level(rawValue: logLevel) ?? .info)
        guard let address = ListenAddress(parsing: listen) else { throw ExitCode(.usage) }
        var tls: TLSFiles?
        if let tlsCert, let tlsKey {
            tls = TLSFiles(certificatePath: absolutePath(tlsCert), keyPath: absolutePath(tlsKey))
        }
        var configuration = SyncServer.Configuration(
            root: absolutePath(root ?? tokens ?? "."), address: address, tls: tls,
            logger: Logger(label: "syncfs-server"))
        guard (1...36_500).contains(auditDays) else { throw ValidationError("--audit-days must be 1...36500") }
        configuration.auditRetentionDays = auditDays
        configuration.collection = try collection()
        configuration.quotas = try quotas()
        configuration.bandwidth = try bandwidthOptions.limits()
        // Before the server makes its series; a busy address fails before the database is opened.
        let metrics: MetricsEndpoint?
        do {
            metrics = try observability.startMetrics(logger: configuration.logger)
        } catch {
            throw fail(SyncServerError(.badInput, "\(error)"))
        }
        defer { metrics?.stop() }
        var backend: DatabaseBackend.Opened?
        if let database, let chunkStore {
            do throws(BackendFailure) {
                let opened = try DatabaseBackend.open(try DatabaseBackend.settings(database), chunkStore: chunkStore)
                configuration.containers = PostgresContainerSource(store: opened.store)
                // The database's tokens, unless an older setup names its token directory.
                if tokens == nil { configuration.tokens = AccessControl(store: PostgresAccess(store: opened.store)) }
                backend = opened
            } catch {
                throw fail(error)
            }
        }
        defer { backend?.shutdown() }
        let server: SyncServer
        do {
            server = try SyncServer(configuration)
        } catch {
            throw fail(error)
        }
        if tls == nil, !address.isLoopback {
            printError(
                "syncfs-mount serve: warning: plain HTTP on \(address): tokens and data cross the network "
                    + "unencrypted; use --tls-cert and --tls-key")
        }
        let failure = Mutex<SyncServerError?>(nil)
        let stopped = DispatchSemaphore(value: 0)
        let scheme = server.scheme
        let lifeline = self.lifeline
        Task {
            do throws(SyncServerError) {
                try await server.runUntilSignalled { bound in
                    // The readiness signal: one line on standard output, written unbuffered.
                    let line = Array("listening on \(scheme)://\(bound)\n".utf8)
                    _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
                    // Only now: a SIGTERM before the server's handlers are in place was lost.
                    if lifeline { Self.stopAtEndOfInput() }
                }
            } catch {
                failure.withLock { $0 = error }
            }
            stopped.signal()
        }
        stopped.wait()
        if let error = failure.withLock({ $0 }) { throw fail(error) }
    }

    /// `--lifeline`: a thread reads standard input and, at end-of-file (the test runner that
    /// started the server died or closed the pipe), sends this process SIGTERM — the same
    /// graceful stop as from outside.
    private static func stopAtEndOfInput() {
        // Never stopped: it blocks in read(2) for the server's whole life.
        Worker.start("syncfs-serve-lifeline") { _ in
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let count = read(STDIN_FILENO, &buffer, buffer.count)
                if count > 0 { continue }
                if count < 0, errno == EINTR { continue }
                kill(getpid(), SIGTERM)
                return
            }
        }
    }

    /// A process started in the background (by a shell's `&`, or a test runner) may inherit
    /// SIGINT/SIGTERM ignored or blocked; the server's graceful stop needs them delivered.
    private static func resetTerminationSignals() {
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_UNBLOCK, &all, nil)
        for signal in [SIGINT, SIGTERM] { Glibc.signal(signal, SIG_DFL) }
        Glibc.signal(SIGPIPE, SIG_IGN)
    }
}

/// Prints `error` on standard error and exits with its documented code.
func fail(_ error: SyncServerError) -> ExitCode {
    printError("syncfs-mount: \(error.description)")
    return ExitCode(error.exitStatus)
}
