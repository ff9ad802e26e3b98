import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import UnixSignals

/// The sync server: serves every container under a root directory over HTTP(S) with the protocol
/// of doc/PROTOCOL.md (a Hummingbird 2 application; `SyncResponder` answers the requests).
///
/// - `ROOT/NAME` is a local container (`LocalContainer`) if it holds a container marker; the
///   server never creates one (`syncfs-mount token create` does). A container directory replaced
///   while the server runs is reopened from the next request on (`ContainerRegistry`).
///   With `Configuration.containers` set, the containers come from that source instead (a
///   PostgreSQL store: `syncfs-mount serve --database`), and `root` holds only the tokens.
/// - Fair and bounded (`ServerLimits`): request bodies and chunk uploads are budgeted per token,
///   per container and for the server (`BodyBudget`: `429`/`503` beyond), decoding JSON against a
///   memory budget (`MemoryBudget`), slow requests and idle connections without a token cut off
///   (`ConnectionGuard`); change pages hold at most `WireProtocol.maxChangePageBytes` in their
///   form, JSON or binary (`ChangePage`). The open-file limit is raised to its hard limit at
///   start (`DescriptorLimit`).
/// - Tokens live in `ROOT/.syncfs-server/tokens.db` (`TokenStore`), or in `Configuration.tokens`
///   (a database's), read afresh on every request.
/// - Graceful stop (SIGINT/SIGTERM, or the test helper's `stop`): pending change waits answer
///   `{"changed":false}` at once, requests in flight finish (within 30 s, then they are
///   cancelled), new connections are refused; container writes are atomic in any case.
///
/// `syncfs-mount serve` uses `runUntilSignalled`; tests and benchmarks use `SyncTestServer`.
public struct SyncServer: Sendable {
    public struct Configuration: Sendable {
        /// The directory holding the containers (must exist).
        public var root: String
        public var address: ListenAddress
        /// HTTPS with these files; plain HTTP when nil.
        public var tls: TLSFiles?
        public var logger: Logger
        /// What one client may take of the server (`ServerLimits`; doc/PROTOCOL.md documents the
        /// defaults).
        public var limits = ServerLimits.standard()
        /// Where the containers come from instead of the directories under `root` (then `root`
        /// only holds the token database): `syncfs-mount serve --database`. Nil: `root`'s.
        public var containers: (any ContainerSource)?
        /// Where tokens are checked instead of `root`'s token database (`TokenAuthority`):
        /// `syncfs-mount serve --database` without `--tokens`. With both this and `containers`
        /// set, `root` is not used at all (nothing is read or created there).
        public var tokens: (any TokenAuthority)?
        /// Collect the containers' garbage on this schedule (`serve --gc-every`;
        /// `CollectionSchedule`); nil: never (the default). Needs a container source that can
        /// list its containers (`ContainerCatalog`: the root's, a database's).
        public var collection: CollectionSchedule.Settings?
        /// Per-container storage quotas (`serve --quota`, `--default-quota`; `QuotaBook`).
        public var quotas = QuotaSettings()
        /// Bandwidth limits on chunk bytes (`serve --upload-limit`, `--total-upload-limit`, …;
        /// `ServerBandwidth`); none by default.
        public var bandwidth = ServerBandwidthLimits()
        /// The monotonic clock the bandwidth limits count time on (a test's own, or the real one).
        package var bandwidthClock: @Sendable () -> Duration = ServerBandwidth.realClock
        /// Whether the batch endpoints are served (`WireProtocol.Feature`); false only for tests
        /// that play a server older than them.
        package var servesBatches = true
        /// How long audit lines are kept (`serve --audit-days`; `AuditService`).
        public var auditRetentionDays = AuditService.defaultRetentionDays

        /// The most chunk uploads read, verified and stored at once on the whole server (each
        /// holds up to ~32 MiB); more are answered `503` with `Retry-After: 1`. Setting it sets
        /// `limits` to the standard ones for that many uploads. Default: `defaultChunkUploads`.
        public var maxConcurrentChunkUploads: Int {
            get { limits.server.uploads }
            set { limits = .standard(uploads: newValue) }
        }

        public init(
            root: String, address: ListenAddress, tls: TLSFiles? = nil, logger: Logger = Logger(label: "syncfs-server")
        ) {
            self.root = root
            self.address = address
            self.tls = tls
            self.logger = logger
        }

        public init(
            root: String, host: String = "127.0.0.1", port: Int = 0, tls: TLSFiles? = nil,
            logger: Logger = Logger(label: "syncfs-server")
        ) {
            self.init(root: root, address: ListenAddress(host: host, port: port), tls: tls, logger: logger)
        }
    }

    public let configuration: Configuration
    /// The embedded token database, when the tokens are `root`'s (`Configuration.tokens` nil).
    package let tokenStore: TokenStore?
    let tokens: any TokenAuthority
    let containers: any ContainerSource
    let tlsConfiguration: TLSConfiguration?

    /// Eight per core, at least 16: verifying a chunk is CPU work, but storing it is mostly
    /// waiting for fsync, and a refused upload costs the client a backoff. Worst case (16 MiB
    /// chunks) about 32 MiB each; typical chunks (1 MiB) 2 MiB.
    public static let defaultChunkUploads = max(16, 8 * System.coreCount)

    /// How long a graceful stop waits for requests in flight before cancelling them.
    static let maximumGracefulStop: Duration = .seconds(30)
    /// Connections idle this long are closed (longer than the longest change wait).
    static let idleTimeout: TimeAmount = .seconds(75)

    /// Checks the configuration and opens the token database (creating it if missing). Throws
    /// `badInput` for a missing root or bad TLS files, `cannotCreate` for the token database.
    public init(_ configuration: Configuration) throws(SyncServerError) {
        let usesRoot = configuration.tokens == nil || configuration.containers == nil
        var isDirectory: ObjCBool = false
        if usesRoot {
            guard FileManager.default.fileExists(atPath: configuration.root, isDirectory: &isDirectory),
                isDirectory.boolValue
            else {
                throw SyncServerError(.badInput, "the root \(configuration.root) is not an existing directory")
            }
        }
        self.configuration = configuration
        self.tlsConfiguration = try configuration.tls?.serverConfiguration()
        if let authority = configuration.tokens {
            self.tokenStore = nil
            self.tokens = authority
        } else {
            let store = try TokenStore(root: configuration.root)
            self.tokenStore = store
            self.tokens = AccessControl(store: EmbeddedAccessStore(store: store))
        }
        self.containers =
            configuration.containers ?? LocalContainerSource(registry: ContainerRegistry(root: configuration.root))
    }

    /// `http` or `https`.
    public var scheme: String { configuration.tls == nil ? "http" : "https" }

    /// Serves until SIGINT or SIGTERM, then stops gracefully and returns (first raising the
    /// open-file limit to its hard limit, `DescriptorLimit`). `onListening` is called
    /// once, when the socket is bound, with the real address (the port the system chose for 0).
    public func runUntilSignalled(
        onListening: @escaping @Sendable (ListenAddress) -> Void
    ) async throws(SyncServerError) {
        if let raised = DescriptorLimit.raiseToHardLimit(), raised.after > raised.before {
            configuration.logger.info("raised the open-file limit from \(raised.before) to \(raised.after)")
        }
        let (group, _) = try makeServiceGroup(signals: [.sigterm, .sigint], onListening: onListening)
        do {
            try await group.run()
        } catch {
            throw Self.failure(error, address: configuration.address)
        }
    }

    /// The server as a service group: the Hummingbird application, then the watcher that tells
    /// pending waits to end (last, so graceful shutdown reaches it first); and its responder and
    /// connections (for `SyncTestServer`'s view of the requests in progress).
    package func makeServiceGroup(
        signals: [UnixSignal], onListening: @escaping @Sendable (ListenAddress) -> Void
    ) throws(SyncServerError) -> (ServiceGroup, ServerState) {
        ServerMetrics.prepare()
        let shutdown = ShutdownSignal()
        let limits = configuration.limits
        let audit = (tokens as? AccessControl).map { AuditLog(store: $0.store, logger: configuration.logger) }
        var responder = SyncResponder(
            tokens: tokens, containers: containers, shutdown: shutdown, bodies: BodyBudget(limits: limits),
            decoding: MemoryBudget(capacity: limits.decodingMemory),
            quotas: configuration.quotas.isEmpty
                ? nil : QuotaBook(settings: configuration.quotas, logger: configuration.logger),
            outages: StorageOutageLog(logger: configuration.logger),
            bandwidth: configuration.bandwidth.isEmpty
                ? nil : ServerBandwidth(configuration.bandwidth, clock: configuration.bandwidthClock),
            servesBatches: configuration.servesBatches,
            audit: audit,
            logins: (tokens as? AccessControl).map { LoginService(store: $0.store) },
            links: (tokens as? AccessControl).map { LinkService(store: $0.store) })
        if let access = tokens as? AccessControl {
            responder.web = WebPages(
                sessions: WebSessions(store: access.store, secure: configuration.tls != nil),
                logins: responder.logins ?? LoginService(store: access.store), containers: containers,
                templates: WebTemplates(), audit: audit, bandwidth: responder.bandwidth, bodies: responder.bodies,
                quotas: responder.quotas, links: responder.links)
        }
        let book = ConnectionBook(limits: limits)
        let http = HTTPServerBuilder.http1(
            configuration: .init(
                additionalChannelHandlers: [ConnectionGuard(book: book)], idleTimeout: Self.idleTimeout))
        let server: HTTPServerBuilder
        if let tlsConfiguration {
            do {
                server = try .tls(http, tlsConfiguration: tlsConfiguration)
            } catch {
                throw SyncServerError(.badInput, "cannot set up TLS: \(error)")
            }
        } else {
            server = http
        }
        let address = configuration.address
        let application = Application(
            responder: responder, server: server,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port)),
            onServerRunning: { channel in
                onListening(ListenAddress(host: address.host, port: channel.localAddress?.port ?? address.port))
            },
            logger: configuration.logger)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let audit {
            // First: the graceful stop reaches it last, after the requests whose lines it flushes.
            services.append(
                .init(service: AuditService(log: audit, retentionDays: configuration.auditRetentionDays)))
        }
        services += [.init(service: application), .init(service: ShutdownWatcher(signal: shutdown))]
        if var schedule = try collectionSchedule() {
            schedule.audit = audit
            // Last: the graceful stop reaches it first, so no collection outlives the server.
            services.append(.init(service: CollectionService(schedule: schedule)))
            configuration.logger.info("\(schedule.summary)")
        }
        var group = ServiceGroupConfiguration(
            services: services,
            gracefulShutdownSignals: signals, logger: configuration.logger)
        group.maximumGracefulShutdownDuration = Self.maximumGracefulStop
        return (ServiceGroup(configuration: group), ServerState(responder: responder, connections: book))
    }

    /// The garbage collection schedule the configuration asks for, if any (`badInput` if its
    /// settings are unusable or the containers cannot be listed).
    func collectionSchedule() throws(SyncServerError) -> CollectionSchedule? {
        guard let settings = configuration.collection else { return nil }
        if let problem = settings.problem { throw SyncServerError(.badInput, problem) }
        var catalogs: [any ContainerCatalog] = []
        if let catalog = containers as? any ContainerCatalog { catalogs.append(catalog) }
        // Another backend's containers with the root's tokens (`serve --database --tokens DIR`).
        if configuration.containers != nil, let tokenStore { catalogs.append(TokenStoreCatalog(store: tokenStore)) }
        guard !catalogs.isEmpty else {
            throw SyncServerError(.badInput, "these containers cannot be listed: no garbage collection schedule")
        }
        let catalog = catalogs.count == 1 ? catalogs[0] : CatalogUnion(catalogs: catalogs)
        return CollectionSchedule(
            settings: settings, catalog: catalog, containers: containers, logger: configuration.logger)
    }

    /// A failure to serve, with its exit code: the address in use, not ours to bind, or unknown.
    package static func failure(_ error: any Error, address: ListenAddress) -> SyncServerError {
        if let error = error as? SyncServerError { return error }
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE: return SyncServerError(.busy, "\(address) is already in use")
            case EACCES: return SyncServerError(.permissionDenied, "this user may not listen on \(address)")
            case EADDRNOTAVAIL: return SyncServerError(.badInput, "\(address) is not an address of this machine")
            default: break
            }
        }
        if error is SocketAddressError {
            return SyncServerError(.badInput, "cannot resolve the host of \(address): \(error)")
        }
        return SyncServerError(.failed, "the server stopped: \(error)")
    }
}

/// A running server's parts that tests look at (`SyncTestServer`, in SyncServerTesting).
package struct ServerState: Sendable {
    let responder: SyncResponder
    let connections: ConnectionBook

    /// The change waits that began and have not answered yet.
    package var pendingChangeWaits: Int { responder.shutdown.pendingWaits }
    /// The chunk uploads holding a slot (`BodyBudget`).
    package var chunkUploadsInProgress: Int { responder.bodies.uploadsInProgress }
    /// Request body bytes reserved now (`BodyBudget`).
    package var bodyBytesInFlight: Int { responder.bodies.bytesInFlight }
    /// Chunk bytes the bandwidth limits counted each way, and their refusals (`ServerBandwidth`);
    /// nil without limits.
    package var bandwidthCounts: (uploaded: Int64, downloaded: Int64, refusals: Int)? {
        responder.bandwidth.map { ($0.counts.uploadedBytes, $0.counts.downloadedBytes, $0.counts.refusals) }
    }
    /// Open connections, and those that have made no request with a valid token.
    package var connectionCounts: (open: Int, unauthenticated: Int) { connections.counts }
    /// Whether the graceful stop has begun.
    package var isStopping: Bool { responder.shutdown.isTriggered }
}
