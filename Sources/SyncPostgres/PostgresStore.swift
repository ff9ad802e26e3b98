import Foundation
import Logging
import PostgresNIO
import SyncBackend
import Synchronization

/// A SyncFS store in PostgreSQL: containers, entries, versions and change feeds in one database
/// (`PostgresSchema`), chunk bytes in a `ChunkBlobStore`. Several processes may open the same
/// database at once (several `serve` processes behind a load balancer): commits are serialised by
/// the database, not by this process (`PostgresContainer.commit`), and every commit is announced
/// with `NOTIFY syncfs_changes` so each process's waiters wake.
///
/// Lifecycle: `initialize(settings:)` creates or migrates the schema (the explicit `server-init`
/// step; nothing else ever creates it); `open(settings:blobs:)` checks the schema version and
/// starts the connection pool and the listener; `shutdown()` stops them. A store that was shut
/// down answers every call with `unavailable`.
///
/// Connections: one bounded pool per store (`Options.maximumConnections`, default 8), one of
/// which is held by the `LISTEN` for as long as the store is open; idle connections beyond one
/// close after 60 s. Every operation has a deadline (`Options.operationTimeout`): a database that
/// cannot be reached is `unavailable` after at most that long, never a hang.
public final class PostgresStore: Sendable {
    public struct Options: Sendable {
        /// The most connections this process opens (the listener holds one). At least 2.
        public var maximumConnections = 8
        /// How long one operation (a commit, a read) may take before it is `unavailable`.
        public var operationTimeout: Duration = .seconds(10)
        /// How often a waiter re-reads its container's version without a notification: the
        /// backstop for a notification lost while the listener reconnects.
        public var recheckInterval: Duration = .seconds(5)
        public var logger = Logger(label: "syncfs.postgres")
        public init() {}
    }

    /// The `NOTIFY` channel; the payload is the container's row ID.
    static let channel = "syncfs_changes"

    public let settings: PostgresSettings
    let client: PostgresClient
    let blobs: any ChunkBlobStore
    let options: Options
    private let runTask: Task<Void, Never>
    private let listenTask: Mutex<Task<Void, Never>?> = Mutex(nil)
    private let notifiers = Mutex<[Int64: ChangeNotifier]>([:])
    private let versions = Mutex<[Int64: SharedVersionRead]>([:])
    /// How many times a container's version was read from the database (for tests).
    let versionReads = Atomic<Int>(0)
    /// Whether the `LISTEN` is in place now (waiters fall back on the backstop while it is not).
    private let listening = Atomic<Bool>(false)

    /// A store that has not checked the schema nor started listening (`open` does both).
    init(settings: PostgresSettings, blobs: any ChunkBlobStore, options: Options) {
        self.settings = settings
        self.blobs = blobs
        self.options = options
        var configuration = settings.clientConfiguration()
        configuration.options.maximumConnections = max(2, options.maximumConnections)
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = options.operationTimeout
        // The pool logs every failed connection attempt at `info`, with backoff: a warning and up.
        var background = options.logger
        background.logLevel = max(background.logLevel, .warning)
        let client = PostgresClient(configuration: configuration, backgroundLogger: background)
        self.client = client
        self.runTask = Task { await client.run() }
    }

    // MARK: Initialisation (server-init)

    /// Creates the schema in the database `url` names, or migrates it to this code's version;
    /// refuses a schema newer than this code (`schemaTooNew`). Safe to run again and from
    /// several processes at once.
    public static func initialize(url: String, options: Options = Options()) async throws(PostgresStoreError) {
        let settings: PostgresSettings
        do { settings = try PostgresSettings(url: url) } catch { throw .failed(error.description) }
        try await initialize(settings: settings, options: options)
    }

    public static func initialize(settings: PostgresSettings, options: Options = Options())
        async throws(PostgresStoreError)
    {
        try await PostgresProbe.check(settings, timeout: options.operationTimeout, logger: options.logger)
        let store = PostgresStore(settings: settings, blobs: NoBlobs(), options: options)
        defer { store.stop() }
        do {
            // A step may rewrite or index every row (schema 4 indexes every chunk row): minutes on
            // a large database, so the bound is an hour, not one operation's (the probe above
            // already refused a server that does not answer).
            try await withTimeout(max(options.operationTimeout * 3, .seconds(3600))) { [client = store.client] in
                try await PostgresSchema.migrate(client, logger: options.logger)
            }
        } catch {
            throw PostgresFailure.storeError(error, doing: "initialise the schema in \(settings)")
        }
    }

    // MARK: Open, shut down

    /// Opens the store of an initialised database (`notInitialized`, `schemaTooOld`,
    /// `schemaTooNew` otherwise) with chunk bytes in `blobs`.
    public static func open(
        settings: PostgresSettings, blobs: any ChunkBlobStore, options: Options = Options()
    ) async throws(PostgresStoreError) -> PostgresStore {
        try await PostgresProbe.check(settings, timeout: options.operationTimeout, logger: options.logger)
        let store = PostgresStore(settings: settings, blobs: blobs, options: options)
        do {
            try await withTimeout(options.operationTimeout) { [client = store.client] in
                try await PostgresSchema.check(client, settings: settings, logger: options.logger)
            }
        } catch {
            store.stop()
            throw PostgresFailure.storeError(error, doing: "open \(settings)")
        }
        store.startListening()
        return store
    }

    /// Stops the listener and closes every connection. Calls after this are `unavailable`.
    public func shutdown() async {
        stop()
        await runTask.value
    }

    private func stop() {
        listenTask.withLock { $0?.cancel() }
        runTask.cancel()
    }

    // MARK: Containers

    /// Creates an empty container named `name` (`invalidRequest` if one exists, or if the name is
    /// not 1...255 bytes of printable text), with the container ID `id` (`container copy` keeps
    /// the source's) or a new one.
    public func createContainer(
        named name: String, id: String? = nil
    ) async throws(ContainerProtocolError) -> PostgresContainer {
        try Self.checkName(name)
        let containerID = id ?? UUID().uuidString.lowercased()
        let rowID = try await run("create container \(name)") { client in
            let rows = try await client.query(
                """
                INSERT INTO syncfs_containers (name, container_id) VALUES (\(name), \(containerID))
                ON CONFLICT (name) DO NOTHING RETURNING id
                """)
            for try await id in rows.decode(Int64.self) { return Optional(id) }
            return nil
        }
        guard let rowID else { throw .invalidRequest("a container named \(name) exists") }
        return PostgresContainer(store: self, rowID: rowID, containerID: containerID)
    }

    /// The container named `name`, or nil if there is none.
    public func container(named name: String) async throws(ContainerProtocolError) -> PostgresContainer? {
        try Self.checkName(name)
        let found = try await run("look up container \(name)") { client -> (Int64, String)? in
            let rows = try await client.query(
                "SELECT id, container_id FROM syncfs_containers WHERE name = \(name)")
            for try await row in rows.decode((Int64, String).self) { return row }
            return nil
        }
        return found.map { PostgresContainer(store: self, rowID: $0.0, containerID: $0.1) }
    }

    static func checkName(_ name: String) throws(ContainerProtocolError) {
        guard (1...255).contains(name.utf8.count),
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw .invalidRequest("a container name must be 1 to 255 bytes of printable text") }
    }

    // MARK: Running operations

    /// Runs `body` against the pool within `timeout` (nil: `operationTimeout`), mapping every
    /// failure to a container error (`unavailable` for anything transient).
    func run<T: Sendable>(
        _ what: String, timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresClient) async throws -> T
    ) async throws(ContainerProtocolError) -> T {
        let measure = StorageMetrics(backend: "postgres", operation: "query")
        do {
            let result = try await withTimeout(timeout ?? options.operationTimeout) { [client] in try await body(client)
            }
            measure.ended(failed: false)
            return result
        } catch {
            measure.ended(failed: true)
            throw PostgresFailure.containerError(error, doing: what)
        }
    }

    // MARK: Notifications

    /// The notifier of container `rowID`, shared by every instance of it in this store.
    func notifier(for rowID: Int64) -> ChangeNotifier {
        notifiers.withLock { notifiers in
            if let notifier = notifiers[rowID] { return notifier }
            let notifier = ChangeNotifier()
            notifiers[rowID] = notifier
            return notifier
        }
    }

    /// Container `rowID`'s newest version as of notifier generation `generation`, shared by the
    /// waiters of this store (`SharedVersionRead`): one query per notification or per
    /// `recheckInterval`, not one per waiter.
    func sharedVersion(_ rowID: Int64, generation: UInt64) async throws(ContainerProtocolError) -> EntryVersion {
        let shared = versions.withLock { all in
            if let shared = all[rowID] { return shared }
            let shared = SharedVersionRead()
            all[rowID] = shared
            return shared
        }
        return try await shared.latest(atGeneration: generation, maxAge: options.recheckInterval) {
            [self] () throws(ContainerProtocolError) in try await readVersion(rowID)
        }
    }

    /// Container `rowID`'s version counter, read now.
    func readVersion(_ rowID: Int64) async throws(ContainerProtocolError) -> EntryVersion {
        versionReads.add(1, ordering: .relaxed)
        let version = try await run("read the container's version") { client in
            let rows = try await client.query("SELECT version FROM syncfs_containers WHERE id = \(rowID)")
            for try await version in rows.decode(Int64.self) { return Optional(version) }
            return nil
        }
        guard let version else { throw .unavailable("the container is no longer in the database") }
        guard let result = EntryVersion(exactly: version) else { throw .storageFailure("the version is damaged") }
        return result
    }

    /// Whether the `LISTEN` is established (for tests and diagnostics).
    public var isListening: Bool { listening.load(ordering: .acquiring) }

    /// Holds one pooled connection in `LISTEN syncfs_changes`, waking the notifier a payload
    /// names; on any failure it waits a second and listens again, waking every waiter once
    /// listening resumes (a notification may have been lost meanwhile).
    private func startListening() {
        let task = Task { [client, options] in
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            self.listening.store(true, ordering: .releasing)
                            self.wakeAll()
                            for try await notification in notifications {
                                if let rowID = Int64(notification.payload) { self.wake(rowID) }
                            }
                        }
                    }
                } catch {
                    if !Task.isCancelled {
                        options.logger.warning(
                            "PostgreSQL listener failed; retrying",
                            metadata: ["reason": "\(PostgresFailure.classify(error).reason)"])
                    }
                }
                self.listening.store(false, ordering: .releasing)
                try? await Task.sleep(for: .seconds(1))
            }
        }
        listenTask.withLock { $0 = task }
    }

    private func wake(_ rowID: Int64) {
        notifiers.withLock { $0[rowID] }?.notify()
    }

    private func wakeAll() {
        for notifier in notifiers.withLock({ Array($0.values) }) { notifier.notify() }
    }
}

/// The blob store of a store opened only to initialise the schema: it never touches chunks.
private struct NoBlobs: ChunkBlobStore {
    func put(_ chunk: EncodedChunk) async throws(ContainerProtocolError) { throw .unavailable("no chunk store") }
    func get(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        throw .unavailable("no chunk store")
    }
    func delete(_ hash: ChunkHash) async throws(ContainerProtocolError) { throw .unavailable("no chunk store") }
}
