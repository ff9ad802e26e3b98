import Logging
import ServiceLifecycle
import SyncBackend

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
public final class SyncTestServer: Sendable {
    /// The port the server listens on.
    public let port: Int
    /// `http` or `https`.
    public let scheme: String
    /// The directory holding the containers.
    public let root: String
    /// The server's token database (shared with the server: changes take effect at once).
    public let tokens: TokenStore

    private let group: ServiceGroup
    private let runner: Task<Void, Never>

    private init(port: Int, server: SyncServer, group: ServiceGroup, runner: Task<Void, Never>) {
        self.port = port
        self.scheme = server.scheme
        self.root = server.configuration.root
        self.tokens = server.tokens
        self.group = group
        self.runner = runner
    }

    /// Starts serving `root` (an existing directory) and returns once the port is bound.
    /// `tls`: serve HTTPS with these PEM files. `logLevel`: the server's log level (requests are
    /// logged at `debug`).
    public static func start(
        root: String, tls: TLSFiles? = nil, logLevel: Logger.Level = .warning
    ) async throws(SyncServerError) -> SyncTestServer {
        var logger = Logger(label: "syncfs-test-server")
        logger.logLevel = logLevel
        let server = try SyncServer(.init(root: root, host: "127.0.0.1", port: 0, tls: tls, logger: logger))
        let (ports, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
        let group = try server.makeServiceGroup(signals: []) { address in
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
                return SyncTestServer(port: port, server: server, group: group, runner: runner)
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
        guard ContainerName.isValid(name) else { throw SyncServerError(.badInput, "'\(name)' is not a container name") }
        do {
            _ = try LocalContainer.openOrCreate(at: root + "/" + name)
        } catch {
            throw SyncServerError(.cannotCreate, "cannot create the container \(name): \(error)")
        }
        return try tokens.create(container: name, label: label).token
    }

    /// Stops the server gracefully and returns once it has stopped.
    public func stop() async {
        await group.triggerGracefulShutdown()
        await runner.value
    }
}
