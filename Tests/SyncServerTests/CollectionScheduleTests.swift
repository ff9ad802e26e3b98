import Foundation
import Logging
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncServer

/// `CollectionSchedule` (`serve --gc-every`) with a manual clock: rounds at each interval, one
/// collection at a time, a failure does not stop it, and it stops at once when cancelled, even
/// with a collection in progress that does not end by itself.
@Suite("Garbage collection on the server's schedule")
struct CollectionScheduleTests {
    @Test func collectsEachContainerAtEachIntervalOneAtATime() async throws {
        let clock = ManualSleeper()
        let box = CollectableStub(name: "box", clock: clock)
        let docs = CollectableStub(name: "docs", clock: clock)
        let schedule = Self.schedule(
            [box, docs], plain: ["plain": InMemoryContainer()], clock: clock, logger: clock.logger)
        let running = Task { await schedule.run() }
        // Nothing runs before the first interval has passed.
        try await clock.waitForSleepers(1)
        #expect(clock.requestedSleeps == [.seconds(3600)])
        #expect(box.calls == 0 && docs.calls == 0)
        for round in 1...3 {
            clock.wakeAll()
            try await clock.waitForSleepers(1)
            #expect(box.calls == round && docs.calls == round, "round \(round)")
        }
        #expect(clock.maxConcurrentCollections == 1, "two collections ran at once")
        #expect(box.lastGrace == .seconds(120))
        #expect(clock.loggedLines.contains { $0.contains("garbage collection of 'box': pruned 1 versions") })
        running.cancel()
        await running.value
    }

    @Test func aFailingCollectionDoesNotStopTheSchedule() async throws {
        let clock = ManualSleeper()
        let failing = CollectableStub(name: "bad", clock: clock, failure: .storageFailure("disk on fire"))
        let good = CollectableStub(name: "good", clock: clock)
        let schedule = Self.schedule([failing, good], clock: clock, logger: clock.logger)
        let running = Task { await schedule.run() }
        for round in 1...2 {
            try await clock.waitForSleepers(1)
            clock.wakeAll()
            try await eventually("round \(round) of both collections", timeout: 60) {
                failing.calls == round && good.calls == round
            }
        }
        try await clock.waitForSleepers(1)
        #expect(clock.loggedLines.contains { $0.contains("warning") && $0.contains("'bad' failed") })
        let outcomes = await schedule.collectRound()
        #expect(outcomes["bad"] == .failure(.storageFailure("disk on fire")))
        #expect(outcomes["good"].map { (try? $0.get()) != nil } == true)
        running.cancel()
        await running.value
    }

    /// A collection that never ends by itself (it ignores cancellation) holds the stop for
    /// `finishWithin` at most.
    @Test func stopsOnCancellationEvenDuringACollection() async throws {
        let clock = ManualSleeper()
        let stuck = CollectableStub(name: "stuck", clock: clock, blocks: true)
        let schedule = Self.schedule([stuck], clock: clock, logger: clock.logger, finishWithin: .milliseconds(100))
        let running = Task { await schedule.run() }
        try await clock.waitForSleepers(1)
        clock.wakeAll()
        try await eventually("the stuck collection started", timeout: 60) { stuck.calls == 1 }
        let cancelled = ContinuousClock.now
        running.cancel()
        // Returns although the collection goes on, after waiting `finishWithin` for it.
        await running.value
        #expect(ContinuousClock.now - cancelled >= .milliseconds(100), "the stop did not wait for the collection")
        try await eventually("the stuck collection cancelled", timeout: 60) { stuck.wasCancelled }
        #expect(stuck.calls == 1)
        stuck.release()
        // And while sleeping: at once.
        let idle = Task { await Self.schedule([], clock: clock, logger: clock.logger).run() }
        try await clock.waitForSleepers(1)
        idle.cancel()
        await idle.value
    }

    /// A round over a real backend goes through its containers: those under the root, or those
    /// a token of the database names. They are collected where the backend can collect
    /// (`CollectableContainer`), skipped where it cannot.
    @Test(arguments: ServerBackend.allCases) func aRoundGoesThroughTheBackendsContainers(kind: ServerBackend)
        async throws
    {
        let backend = try await FixtureBackend.make(kind)
        var failure: (any Error)?
        do {
            let server = try await backend.startServer(maxConcurrentChunkUploads: 16, limits: nil)
            do {
                for name in ["b", "a"] { _ = try await backend.makeContainer(name, on: server) }
                let source = backend.source()
                #expect(try await source.containerNames() == ["a", "b"])
                let clock = ManualSleeper()
                var schedule = CollectionSchedule(
                    settings: .init(interval: .seconds(60)), catalog: source, containers: source,
                    logger: clock.logger)
                let store = try backend.accessStore(on: server)
                let audit = AuditLog(store: store, logger: clock.logger)
                schedule.audit = audit
                let outcomes = await schedule.collectRound()
                await audit.flush()
                if try await backend.container("a") is any CollectableContainer {
                    #expect(outcomes.keys.sorted() == ["a", "b"])
                    // Each collection is an audit line of the server's.
                    let lines = try await store.audit(container: nil, since: 0, limit: 100).filter {
                        $0.action == AuditAction.gcRun.rawValue
                    }
                    #expect(lines.map { $0.container ?? "" }.sorted() == ["a", "b"])
                    #expect(lines.allSatisfy { $0.actor == "server" && !$0.result.hasPrefix("failed") })
                    for (name, outcome) in outcomes {
                        #expect((try? outcome.get()) != nil, "\(name): \(outcome)")
                    }
                } else {
                    #expect(outcomes.isEmpty, "a container that cannot be collected was: \(outcomes)")
                }
            } catch {
                failure = error
            }
            await server.stop()
        } catch {
            failure = error
        }
        await backend.close()
        if let failure { throw failure }
    }

    /// `SyncServer` makes the schedule `serve` asks for: none by default, a refusal of a bad
    /// interval, the root's containers, and with another backend but the root's tokens
    /// (`serve --database --tokens DIR`) the containers those tokens name.
    @Test func theServerMakesTheScheduleItsConfigurationAsksFor() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        _ = try LocalContainer.openOrCreate(at: root.path + "/docs")
        var configuration = SyncServer.Configuration(root: root.path)
        #expect(try SyncServer(configuration).collectionSchedule() == nil)
        configuration.collection = .init(interval: .seconds(30))
        #expect(throws: SyncServerError.self) { _ = try SyncServer(configuration).collectionSchedule() }
        configuration.collection = .init(interval: .seconds(3600))
        let local = try #require(try SyncServer(configuration).collectionSchedule())
        #expect(try await local.catalog.containerNames() == ["docs"])

        configuration.containers = FixedContainerSource(containers: ["x": InMemoryContainer()])
        let server = try SyncServer(configuration)
        _ = try #require(server.tokenStore).create(container: "x", label: "one")
        _ = try #require(server.tokenStore).create(container: "y", label: "two")
        let other = try #require(try server.collectionSchedule())
        #expect(try await other.catalog.containerNames() == ["x", "y"])
    }

    @Test func theRootsContainersAreListed() throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        for name in ["b", "a"] { _ = try LocalContainer.openOrCreate(at: root.path + "/" + name) }
        try FileManager.default.createDirectory(atPath: root.path + "/not-one", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: root.path + "/.hidden", withIntermediateDirectories: false)
        #expect(try ContainerRegistry(root: root.path).containerNames() == ["a", "b"])
    }

    @Test func settingsAreChecked() {
        typealias Settings = CollectionSchedule.Settings
        #expect(Settings.duration(parsing: "6h") == .seconds(21_600))
        #expect(Settings.duration(parsing: "30m") == .seconds(1800))
        #expect(Settings.duration(parsing: "1d") == .seconds(86_400))
        #expect(Settings.duration(parsing: "90s") == .seconds(90))
        #expect(Settings.duration(parsing: "120") == .seconds(120))
        for bad in ["", "h", "-5m", "1.5h", "6 h", "6H", "1w", "9999999999s"] {
            #expect(Settings.duration(parsing: bad) == nil, "\(bad)")
        }
        #expect(Settings(interval: .seconds(59)).problem != nil)
        #expect(Settings(interval: .seconds(60)).problem == nil)
        #expect(Settings(interval: .seconds(60), grace: .seconds(-1)).problem != nil)
    }

    static func schedule(
        _ collectable: [CollectableStub], plain: [String: any Container] = [:], clock: ManualSleeper, logger: Logger,
        finishWithin: Duration = .seconds(10)
    ) -> CollectionSchedule {
        var containers = plain
        for stub in collectable { containers[stub.name] = stub }
        let source = FixedContainerSource(containers: containers)
        return CollectionSchedule(
            settings: .init(interval: .seconds(3600), grace: .seconds(120)), catalog: FixedCatalog(source: source),
            containers: source, logger: logger, finishWithin: finishWithin,
            sleep: { duration in try await clock.sleep(duration) })
    }
}

struct FixedCatalog: ContainerCatalog {
    let source: FixedContainerSource
    func containerNames() async throws(ContainerProtocolError) -> [String] { Array(source.containers.keys) }
}

/// A manual clock: `sleep` waits until the test wakes the sleepers; it also counts collections
/// in progress (to see that they never overlap) and keeps the log lines.
final class ManualSleeper: Sendable {
    private struct State {
        var sleepers: [UUID: CheckedContinuation<Void, any Error>] = [:]
        var requested: [Duration] = []
        var collecting = 0
        var maxCollecting = 0
        var lines: [String] = []
    }
    private let state = Mutex(State())

    var requestedSleeps: [Duration] { state.withLock { $0.requested } }
    var maxConcurrentCollections: Int { state.withLock { $0.maxCollecting } }
    var loggedLines: [String] { state.withLock { $0.lines } }

    var logger: Logger {
        var logger = Logger(label: "gc-test") { _ in LineHandler(sleeper: self) }
        logger.logLevel = .debug
        return logger
    }

    func log(_ line: String) { state.withLock { $0.lines.append(line) } }

    func sleep(_ duration: Duration) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    state.requested.append(duration)
                    if Task.isCancelled { return true }
                    state.sleepers[id] = continuation
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    func wakeAll() {
        let sleepers = state.withLock { state in
            defer { state.sleepers = [:] }
            return Array(state.sleepers.values)
        }
        for sleeper in sleepers { sleeper.resume() }
    }

    func collectionBegan() {
        state.withLock {
            $0.collecting += 1
            $0.maxCollecting = max($0.maxCollecting, $0.collecting)
        }
    }
    func collectionEnded() { state.withLock { $0.collecting -= 1 } }

    func waitForSleepers(_ count: Int) async throws {
        try await eventually("\(count) sleepers", timeout: 60) { self.state.withLock { $0.sleepers.count } >= count }
    }
}

private struct LineHandler: LogHandler {
    let sleeper: ManualSleeper
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        sleeper.log("\(event.level) \(event.message)")
    }
}

/// A collectable container that counts its collections; it may fail, or block until released
/// (ignoring cancellation, as a slow batch would).
final class CollectableStub: ForwardingTestContainer, CollectableContainer {
    let name: String
    private let clock: ManualSleeper
    private let failure: ContainerProtocolError?
    private let blocks: Bool
    let base = InMemoryContainer()
    private let state = Mutex<(calls: Int, grace: Duration?, cancelled: Bool, released: Bool)>((0, nil, false, false))

    init(name: String, clock: ManualSleeper, failure: ContainerProtocolError? = nil, blocks: Bool = false) {
        self.name = name
        self.clock = clock
        self.failure = failure
        self.blocks = blocks
    }

    var calls: Int { state.withLock { $0.calls } }
    var lastGrace: Duration? { state.withLock { $0.grace } }
    var wasCancelled: Bool { state.withLock { $0.cancelled } }
    func release() { state.withLock { $0.released = true } }

    func collectGarbage(_ options: CollectionOptions) async throws(ContainerProtocolError) -> CollectionReport {
        clock.collectionBegan()
        defer { clock.collectionEnded() }
        state.withLock {
            $0.calls += 1
            $0.grace = options.grace
        }
        // Let another collection start meanwhile if the schedule allowed it.
        await Task.yield()
        if blocks {
            while !state.withLock({ $0.released }) {
                if Task.isCancelled { state.withLock { $0.cancelled = true } }
                try? await Task.sleep(for: .milliseconds(5))  // scenario: a collection running until released
            }
        }
        if let failure { throw failure }
        var report = CollectionReport()
        report.versionsPruned = 1
        report.chunksExamined = 10
        report.chunksDeleted = 2
        report.bytesFreed = 4096
        return report
    }

    func retention() async throws(ContainerProtocolError) -> RetentionPolicy { RetentionPolicy() }
    func setRetention(_ policy: RetentionPolicy) async throws(ContainerProtocolError) {}
    func storageStats() async throws(ContainerProtocolError) -> StorageStats { StorageStats() }

}
