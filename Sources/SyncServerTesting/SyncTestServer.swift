import Logging
import ServiceLifecycle
import SyncBackend
import SyncServer

/// A sync server running inside the calling process on `127.0.0.1` and a port the system chose:
/// for tests and benchmarks (the command line uses `SyncServer.runUntilSignalled`).
///
///     let server = try await SyncTestServer.start(root: directory)
///     let token = try server.makeContainer("docs")
///     let container = try HTTPContainer(... server.url(container: "docs") ..., token: token)
///     …
///     await server.stop()
///
/// `stop()` is the server's graceful stop (as on SIGTERM): pending change waits answer at once,
/// requests in flight finish. Always call it (a server left running keeps its port and threads).
///
/// Tests that must act while a request is in progress on the server (a change wait pending, a
/// chunk upload being read) wait for it with `waitUntil` on `pendingChangeWaits` or
/// `chunkUploadsInProgress` instead of sleeping.
public final class SyncTestServer: Sendable {
    /// The port the server listens on.
    public let port: Int
    /// `http` or `https`.
    public let scheme: String
    /// The directory holding the containers (or only nothing, with `containers` and
    /// `tokenAuthority` given to `start`).
    public let root: String
    /// The server's token database (shared with the server: changes take effect at once); nil
    /// when `start` was given a `tokenAuthority` (a database's tokens).
    public let tokens: TokenStore?

    private let group: ServiceGroup
    private let runner: Task<Void, Never>
    private let state: ServerState

    private init(
        port: Int, server: SyncServer, tokens: TokenStore?, group: ServiceGroup, state: ServerState,
        runner: Task<Void, Never>
    ) {
        self.port = port
        self.scheme = server.scheme
        self.root = server.configuration.root
        self.tokens = tokens
        self.group = group
        self.state = state
        self.runner = runner
    }

    /// Starts serving `root` (an existing directory) and returns once the port is bound.
    /// `tls`: serve HTTPS with these PEM files. `logLevel`: the server's log level (requests are
    /// logged at `debug`). `maxConcurrentChunkUploads`: see `SyncServer.Configuration`; `limits`,
    /// if given, replaces the limits that sets. `containers` and `tokenAuthority`: serve the
    /// containers and check the tokens of another backend (`Configuration.containers`/`.tokens`,
    /// as `serve --database` does), e.g. a PostgreSQL store; then `makeContainer` is the
    /// backend's business, not this server's. `logger`: where the server logs (its level is then
    /// the logger's, not `logLevel`), e.g. a handler a test reads back. `bandwidth`: the limits on
    /// chunk bytes (`serve --upload-limit` …), none by default; `bandwidthClock`: the monotonic
    /// clock they count on (nil: the real one). `servesBatches`: false plays a server older than
    /// the batch endpoints (they answer `404`/`405`, `ContainerInfo` lists no features).
    public static func start(
        root: String, tls: TLSFiles? = nil, logLevel: Logger.Level = .warning,
        maxConcurrentChunkUploads: Int = SyncServer.defaultChunkUploads, limits: ServerLimits? = nil,
        containers: (any ContainerSource)? = nil, tokenAuthority: (any TokenAuthority)? = nil, logger: Logger? = nil,
        quotas: QuotaSettings = QuotaSettings(), bandwidth: ServerBandwidthLimits = ServerBandwidthLimits(),
        bandwidthClock: (@Sendable () -> Duration)? = nil, servesBatches: Bool = true
    ) async throws(SyncServerError) -> SyncTestServer {
        let logger =
            logger
            ?? {
                var made = Logger(label: "syncfs-test-server")
                made.logLevel = logLevel
                return made
            }()
        var configuration = SyncServer.Configuration(root: root, host: "127.0.0.1", port: 0, tls: tls, logger: logger)
        configuration.maxConcurrentChunkUploads = maxConcurrentChunkUploads
        if let limits { configuration.limits = limits }
        configuration.containers = containers
        configuration.tokens = tokenAuthority
        configuration.quotas = quotas
        configuration.bandwidth = bandwidth
        if let bandwidthClock { configuration.bandwidthClock = bandwidthClock }
        configuration.servesBatches = servesBatches
        let server = try SyncServer(configuration)
        // Without another token authority, the tokens are the root's.
        let tokens = server.tokenStore
        guard tokens != nil || tokenAuthority != nil else {
            throw SyncServerError(.failed, "the test server has no token store")
        }
        let (ports, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
        let (group, state) = try server.makeServiceGroup(signals: []) { address in
            continuation.yield(address.port)
            continuation.finish()
        }
        let runner = Task {
            do {
                try await group.run()
                continuation.finish(throwing: SyncServerError(.failed, "the server stopped before it listened"))
            } catch {
                continuation.finish(throwing: SyncServer.failure(error, address: server.configuration.address))
            }
        }
        do {
            for try await port in ports {
                return SyncTestServer(
                    port: port, server: server, tokens: tokens, group: group, state: state, runner: runner)
            }
        } catch let error as SyncServerError {
            throw error
        } catch {
            throw SyncServerError(.failed, "the server did not start: \(error)")
        }
        throw SyncServerError(.failed, "the server did not start")
    }

    /// `scheme://127.0.0.1:PORT`.
    public var baseURL: String { "\(scheme)://127.0.0.1:\(port)" }

    /// The URL of container `name` as a client names it: `scheme://127.0.0.1:PORT/NAME`.
    public func url(container name: String) -> String { baseURL + "/" + name }

    /// Creates the container `ROOT/NAME` if missing and returns a new token for it.
    public func makeContainer(_ name: String, label: String = "test") throws(SyncServerError) -> String {
        guard let tokens else {
            throw SyncServerError(.failed, "this server's tokens are another backend's: make the container there")
        }
        guard ContainerName.isValid(name) else { throw SyncServerError(.badInput, "'\(name)' is not a container name") }
        do {
            _ = try LocalContainer.openOrCreate(at: root + "/" + name)
        } catch {
            throw SyncServerError(.cannotCreate, "cannot create the container \(name): \(error)")
        }
        return try tokens.create(container: name, label: label).token
    }

    /// The change waits (`GET .../changes/wait`) that began and have not answered yet.
    public var pendingChangeWaits: Int { state.pendingChangeWaits }

    /// The chunk uploads (`PUT .../chunks/HASH`) holding a slot: their body is being read, or
    /// their chunk verified or stored.
    public var chunkUploadsInProgress: Int { state.chunkUploadsInProgress }

    /// Request body bytes reserved now (`BodyBudget`).
    public var bodyBytesInFlight: Int { state.bodyBytesInFlight }

    /// Chunk bytes the bandwidth limits counted each way and the requests they refused; nil
    /// without limits (`bandwidth` of `start`).
    public var bandwidthCounts: (uploaded: Int64, downloaded: Int64, refusals: Int)? { state.bandwidthCounts }

    /// Open connections, and those that have made no request with a valid token.
    public var connections: (open: Int, unauthenticated: Int) { state.connectionCounts }

    /// Whether the graceful stop has begun.
    public var isStopping: Bool { state.isStopping }

    /// Returns once `condition` holds (checked every millisecond); throws `failed`, naming `what`,
    /// if it does not within `timeout`.
    ///
    ///     try await server.waitUntil("a change wait is pending") { $0.pendingChangeWaits == 1 }
    public func waitUntil(
        _ what: String, timeout: Duration = .seconds(10), _ condition: (SyncTestServer) -> Bool
    ) async throws(SyncServerError) {
        let deadline = ContinuousClock.now + timeout
        while !condition(self) {
            guard ContinuousClock.now < deadline else {
                throw SyncServerError(.failed, "waited \(timeout) in vain until \(what)")
            }
            do {
                try await Task.sleep(for: .milliseconds(1))
            } catch {
                throw SyncServerError(.failed, "cancelled while waiting until \(what)")
            }
        }
    }

    /// Stops the server gracefully and returns once it has stopped.
    public func stop() async {
        await group.triggerGracefulShutdown()
        await runner.value
    }
}
