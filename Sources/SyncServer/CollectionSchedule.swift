import Foundation
import Logging
import ServiceLifecycle
import SyncBackend
import Synchronization

/// A container source that can name its containers: what the server's collection schedule goes
/// through. Names it gives are checked with `ContainerName.isValid` before use.
public protocol ContainerCatalog: Sendable {
    /// The names of the containers now served; `unavailable` when the store cannot be read.
    func containerNames() async throws(ContainerProtocolError) -> [String]
}

/// The server's garbage collection on a schedule (`syncfs-mount serve --gc-every DURATION
/// --gc-grace SECONDS`; doc/CLI.md, doc/DEPLOY.md).
///
/// Contract:
/// - The first round starts one `interval` after `run` begins; each next one `interval` after the
///   previous round ended, so two rounds never overlap however long one takes.
/// - A round goes through the catalog's containers one at a time (never two collections at
///   once), collecting each that conforms to `CollectableContainer` with the container's own
///   retention and `grace`; the others (a backend without collection) are skipped, and said so
///   at debug level.
/// - Each collection's `CollectionReport` is logged at info level, each failure (of a container,
///   or of the listing) at warning level; a failure never stops the schedule nor the server: the
///   next round tries again.
/// - `run` returns when its task is cancelled (the server's graceful stop): a collection in
///   progress is cancelled (the container stops between batches) and waited for at most
///   `finishWithin`; after that it is left to end on its own, and `run` returns anyway, so a
///   collection never holds up the stop. Collections are safe to interrupt (doc/SEMANTICS.md,
///   "Garbage collection": nothing is deleted that a kept version needs).
public struct CollectionSchedule: Sendable {
    /// The validated settings of `serve --gc-every/--gc-grace`.
    public struct Settings: Sendable, Equatable {
        /// The shortest interval accepted.
        public static let shortestInterval: Duration = .seconds(60)
        public static let defaultGrace: Duration = .seconds(3600)

        public var interval: Duration
        public var grace: Duration

        public init(interval: Duration, grace: Duration = defaultGrace) {
            self.interval = interval
            self.grace = grace
        }

        /// Why the settings are unusable, or nil.
        public var problem: String? {
            if interval < Self.shortestInterval {
                return "--gc-every must be at least 60 s, not \(interval.components.seconds) s"
            }
            if grace < .zero { return "--gc-grace must not be negative" }
            return nil
        }

        /// A duration as `--gc-every` takes it: a whole number with a unit `s`, `m`, `h` or `d`
        /// (`90s`, `30m`, `6h`, `1d`), or plain seconds; nil for anything else.
        public static func duration(parsing text: String) -> Duration? {
            let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
            var digits = Substring(text)
            var unit: Int64 = 1
            if let last = digits.last, let factor = units[last] {
                unit = factor
                digits = digits.dropLast()
            }
            guard (1...9).contains(digits.utf8.count), digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let value = Int64(digits)
            else { return nil }
            return .seconds(value * unit)
        }
    }

    /// Sleeps for a duration; throws when cancelled (`Task.sleep`, or a test's manual clock).
    public typealias Sleep = @Sendable (Duration) async throws -> Void

    let settings: Settings
    let catalog: any ContainerCatalog
    let containers: any ContainerSource
    let logger: Logger
    let sleep: Sleep
    let finishWithin: Duration
    /// Where each container's collection is recorded (`gc-run`); nil: the log only.
    var audit: AuditLog? = nil

    public init(
        settings: Settings, catalog: any ContainerCatalog, containers: any ContainerSource, logger: Logger,
        finishWithin: Duration = .seconds(10), sleep: @escaping Sleep = { try await Task.sleep(for: $0) }
    ) {
        self.settings = settings
        self.catalog = catalog
        self.containers = containers
        self.logger = logger
        self.finishWithin = finishWithin
        self.sleep = sleep
    }

    /// Rounds every `interval` until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await sleep(settings.interval)
            } catch {
                return
            }
            if Task.isCancelled { return }
            await collectRound()
        }
    }

    /// What the schedule does, in a sentence for the log.
    public var summary: String {
        "garbage collection every \(settings.interval.components.seconds) s, grace \(settings.grace.components.seconds) s"
            + " (one container at a time)"
    }

    /// One round: each container in turn. Returns what happened to each (for tests).
    @discardableResult
    func collectRound() async -> [String: Result<CollectionReport, ContainerProtocolError>] {
        let names: [String]
        do {
            names = try await catalog.containerNames().filter(ContainerName.isValid).sorted()
        } catch {
            logger.warning("garbage collection: cannot list the containers: \(error); trying again next round")
            return [:]
        }
        var outcomes: [String: Result<CollectionReport, ContainerProtocolError>] = [:]
        for name in names {
            if Task.isCancelled { break }
            guard let outcome = await collect(name) else { continue }
            outcomes[name] = outcome
            let result: String
            switch outcome {
            case .success(let report):
                ServerMetrics.collected(bytesFreed: report.bytesFreed)
                result = Self.describe(report)
                logger.info("garbage collection of '\(name)': \(result)")
            case .failure(let error):
                ServerMetrics.collected(bytesFreed: nil)
                result = "failed: \(error)"
                logger.warning("garbage collection of '\(name)' failed: \(error); trying again next round")
            }
            audit?.note(
                AuditRecord(
                    time: AccessControl.unixNow(), container: name, actor: "server", address: nil,
                    action: AuditAction.gcRun.rawValue, target: "scheduled collection", result: result))
        }
        return outcomes
    }

    /// The collection of `name`; nil when there is nothing to collect (gone, or not collectable).
    private func collect(_ name: String) async -> Result<CollectionReport, ContainerProtocolError>? {
        let container: (any Container)?
        do {
            container = try await containers.container(named: name)
        } catch {
            return .failure(error)
        }
        guard let container else { return nil }
        guard let collectable = container as? any CollectableContainer else {
            logger.debug("garbage collection: the container '\(name)' cannot be collected by its backend")
            return nil
        }
        let options = CollectionOptions(grace: settings.grace)
        let work = Task { () -> Result<CollectionReport, ContainerProtocolError> in
            do throws(ContainerProtocolError) {
                return .success(try await collectable.collectGarbage(options))
            } catch {
                return .failure(error)
            }
        }
        return await Self.result(of: work, orAfterCancellation: finishWithin)
            ?? .failure(.unavailable("the server stopped before the collection ended"))
    }

    /// `work`'s result; if the calling task is cancelled, `work` is cancelled too and waited for
    /// at most `patience` more (nil when it has not ended by then).
    static func result<Value: Sendable>(
        of work: Task<Value, Never>, orAfterCancellation patience: Duration
    ) async -> Value? {
        let first = FirstOffer<Value>()
        let waiter = Task { first.offer(await work.value) }
        let value = await withTaskCancellationHandler {
            await first.value()
        } onCancel: {
            work.cancel()
            Task {
                try? await Task.sleep(for: patience)
                first.offer(nil)
            }
        }
        waiter.cancel()
        return value
    }

    static func describe(_ report: CollectionReport) -> String {
        "pruned \(report.versionsPruned) versions and \(report.tombstonesPurged) tombstones, deleted "
            + "\(report.chunksDeleted) of \(report.chunksExamined) chunks (\(report.bytesFreed) bytes freed), "
            + "kept \(report.chunksInGrace) in grace and \(report.chunksRevived) revived"
    }
}

/// The first of several offered values, awaited without regard to cancellation (the caller's
/// cancellation is what makes the second offer come).
private final class FirstOffer<Value: Sendable>: Sendable {
    private let state = Mutex<(offered: Value??, waiter: CheckedContinuation<Value?, Never>?)>((nil, nil))

    func offer(_ value: Value?) {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard state.offered == nil else { return nil }
            state.offered = .some(value)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    func value() async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let offered = state.withLock { state -> Value?? in
                if let offered = state.offered { return offered }
                state.waiter = continuation
                return nil
            }
            if let offered { continuation.resume(returning: offered) }
        }
    }
}

/// The schedule as a service of the server's group: it stops at the group's graceful shutdown.
struct CollectionService: Service {
    let schedule: CollectionSchedule

    func run() async {
        await cancelWhenGracefulShutdown { await schedule.run() }
    }
}

extension LocalContainerSource: ContainerCatalog {
    /// The directories under the root that hold a container marker (`ContainerRegistry`).
    func containerNames() async throws(ContainerProtocolError) -> [String] {
        let registry = registry
        return try await Offload.run { () throws(ContainerProtocolError) -> [String] in
            try registry.containerNames()
        }
    }
}

/// The containers a token database names (valid or revoked tokens): with `serve --database
/// --tokens DIR`, the containers clients reach are those of DIR's tokens.
struct TokenStoreCatalog: ContainerCatalog {
    let store: TokenStore

    func containerNames() async throws(ContainerProtocolError) -> [String] {
        let store = store
        return try await Offload.run { () throws(ContainerProtocolError) -> [String] in
            do {
                return Array(Set(try store.list().map(\.container))).sorted()
            } catch {
                throw .unavailable("cannot read the token database: \(error)")
            }
        }
    }
}

/// The names of several catalogs together, each once.
struct CatalogUnion: ContainerCatalog {
    let catalogs: [any ContainerCatalog]

    func containerNames() async throws(ContainerProtocolError) -> [String] {
        var names: Set<String> = []
        for catalog in catalogs { names.formUnion(try await catalog.containerNames()) }
        return names.sorted()
    }
}
