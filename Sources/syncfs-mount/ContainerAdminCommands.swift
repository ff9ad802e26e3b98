import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
import SyncPostgres

/// `container gc`, `container stats` and `container retention` (doc/CLI.md): garbage
/// collection, storage figures and the retention policy of a container the caller administers —
/// a local container directory, or `db:NAME` in `--database` with chunks in `--chunk-store`.
///
/// Exit statuses: 0 done; 64 a bad command line or policy; 65 not a container (or one that
/// cannot be collected); 75 the container is unreachable or failed (run again).

/// Which container an admin command works on, and how it is opened.
struct ContainerAdminTarget: ParsableArguments {
    @Argument(help: "A local container directory, or db:NAME.")
    var container: String

    @Option(help: ArgumentHelp("The PostgreSQL store db:NAME is in (made by server-init).", valueName: "url"))
    var database: String?

    @Option(
        name: .customLong("chunk-store"),
        help: ArgumentHelp(
            "With --database: s3://BUCKET[/PREFIX]?endpoint=URL&region=R, or a chunk directory.",
            valueName: "location"))
    var chunkStore: String?

    func validate() throws {
        try LocationCheck.check(
            LocationCheck.directoryProblem(container, option: "the container"),
            LocationCheck.chunkStoreProblem(chunkStore))
        let end = CopyEnd(container)
        if case .database(let name) = end {
            guard ContainerName.isValid(name) else {
                throw ValidationError(
                    "'\(name)' is not a container name (1-64 bytes of A-Z a-z 0-9 . _ -, no leading .)")
            }
            guard database != nil, chunkStore != nil else {
                throw ValidationError("db:NAME needs --database URL and --chunk-store LOCATION")
            }
        } else if database != nil || chunkStore != nil {
            throw ValidationError("--database and --chunk-store go with a db:NAME container")
        }
    }

    /// Opens the container, runs `body` on it, and closes what was opened.
    func with<T: Sendable>(
        _ body: @escaping @Sendable (any CollectableContainer) async throws(ContainerProtocolError) -> T
    ) throws(BackendFailure) -> T {
        makeFilesPrivate()
        var opened: DatabaseBackend.Opened?
        if let database, let chunkStore {
            opened = try DatabaseBackend.open(try DatabaseBackend.settings(database), chunkStore: chunkStore)
        }
        defer { opened?.shutdown() }
        let target = try open(store: opened?.store)
        let result = blockOn { () async -> Result<T, ContainerProtocolError> in
            do throws(ContainerProtocolError) { return .success(try await body(target)) } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error):
            throw BackendFailure(error.isRetryable ? .temporaryFailure : .badInput, "\(container): \(error)")
        }
    }

    private func open(store: PostgresStore?) throws(BackendFailure) -> any CollectableContainer {
        switch CopyEnd(container) {
        case .local(let path):
            guard LocalContainer.isContainer(at: path) else {
                throw BackendFailure(.badInput, LocalContainer.whatIsThere(path))
            }
            do {
                return try LocalContainer.openExisting(at: path)
            } catch {
                throw BackendFailure(.badInput, "cannot open the container \(path): \(error.description)")
            }
        case .database(let name):
            let found = try CopyEnd.database(name).openSource(store: store)
            guard let collectable = found as? any CollectableContainer else {
                throw BackendFailure(
                    .badInput, "db:\(name): this syncfs-mount cannot collect or account for containers in PostgreSQL")
            }
            return collectable
        }
    }
}

/// `container gc CONTAINER [--grace SECONDS] [--dry-run] [--json]`.
struct ContainerGCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Prune what is past retention and delete the chunks nothing kept names.",
        discussion: """
            Safe while mounts and servers use the container: a chunk stored within --grace is \
            kept, and a commit that needs a deleted chunk is refused until its client uploads it \
            again (which it does). Prints what was freed; --dry-run counts without changing \
            anything.
            """
    )

    static let maximumGrace = 365 * 86_400

    @OptionGroup var target: ContainerAdminTarget

    @Option(help: ArgumentHelp("Keep unreferenced chunks stored less than this long ago.", valueName: "seconds"))
    var grace = 3600

    @Flag(name: .customLong("dry-run"), help: "Count what would go; change nothing.")
    var dryRun = false

    @Flag(help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        guard (0...Self.maximumGrace).contains(grace) else {
            throw ValidationError("--grace must be within 0...\(Self.maximumGrace) seconds, not \(grace)")
        }
    }

    struct Output: Codable {
        var container: String
        var dryRun: Bool
        var graceSeconds: Int
        var retention: RetentionPolicy
        var report: CollectionReport
    }

    func run() throws {
        let options = CollectionOptions(grace: .seconds(grace), dryRun: dryRun)
        let (retention, report): (RetentionPolicy, CollectionReport)
        do {
            (retention, report) = try target.with { (container) async throws(ContainerProtocolError) in
                (try await container.retention(), try await container.collectGarbage(options))
            }
        } catch { throw fail(error) }
        if json {
            return printJSON(
                Output(
                    container: target.container, dryRun: dryRun, graceSeconds: grace, retention: retention,
                    report: report))
        }
        let verb = dryRun ? "to delete" : "deleted"
        print(
            "\(target.container) (retention \(retention), grace \(HumanUnits.duration(Double(grace))))\(dryRun ? ", dry run" : ""):"
        )
        print(
            "  history: \(HumanUnits.count(report.versionsPruned, "superseded version")) "
                + "\(dryRun ? "would be " : "")pruned, "
                + "\(HumanUnits.count(report.tombstonesPurged, "deleted entry", "deleted entries")) "
                + "\(dryRun ? "would leave" : "left") the trash")
        print(
            "  chunks:  \(HumanUnits.count(report.chunksExamined, "chunk")) examined, \(report.chunksDeleted) \(verb) "
                + "(\(HumanUnits.bytes(report.bytesFreed)) \(dryRun ? "to free" : "freed")), "
                + "\(report.chunksInGrace) kept within the grace period, \(report.chunksRevived) kept for new commits")
    }
}

/// `container stats CONTAINER [--json]`.
struct ContainerStatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show what a container stores: entries, versions, chunks, bytes and ratios."
    )

    @OptionGroup var target: ContainerAdminTarget

    @Flag(help: "Print the figures as JSON.")
    var json = false

    struct Output: Codable {
        var container: String
        var retention: RetentionPolicy
        var stats: StorageStats
        var deduplicationRatio: Double?
        var compressionRatio: Double?
    }

    func run() throws {
        let (retention, stats): (RetentionPolicy, StorageStats)
        do {
            (retention, stats) = try target.with { (container) async throws(ContainerProtocolError) in
                (try await container.retention(), try await container.storageStats())
            }
        } catch { throw fail(error) }
        if json {
            return printJSON(
                Output(
                    container: target.container, retention: retention, stats: stats,
                    deduplicationRatio: stats.deduplicationRatio, compressionRatio: stats.compressionRatio))
        }
        func ratio(_ value: Double?) -> String { value.map { String(format: "%.2fx", $0) } ?? "n/a" }
        print("\(target.container):")
        print(
            "  entries:   \(stats.liveEntries) live, \(stats.trashedEntries) in the trash "
                + "(\(HumanUnits.count(stats.tombstones, "tombstone")) in all)")
        print(
            "  versions:  \(HumanUnits.count(stats.keptVersions, "superseded version")) kept (retention \(retention))")
        print(
            "  chunks:    \(HumanUnits.count(stats.chunks, "chunk")): \(HumanUnits.bytes(stats.storedBytes)) stored, "
                + "\(HumanUnits.bytes(stats.chunkPlainBytes)) plain")
        print(
            "  files:     \(HumanUnits.bytes(stats.logicalBytes)) in live files; deduplication "
                + "\(ratio(stats.deduplicationRatio)), compression \(ratio(stats.compressionRatio))")
    }
}

/// `container retention CONTAINER [--days N] [--versions N]`: shows the policy; sets what is given.
struct ContainerRetentionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Show or set how long a container keeps old versions and deleted entries.",
        discussion: """
            A superseded version is kept while it was replaced less than --days ago, or while it \
            is one of its entry's --versions newest superseded versions; a deleted entry stays in \
            the trash for --days. The next gc applies a shorter policy.
            """
    )

    @OptionGroup var target: ContainerAdminTarget

    @Option(help: ArgumentHelp("Keep superseded versions and deleted entries this many days.", valueName: "n"))
    var days: Int?

    @Option(help: ArgumentHelp("Keep at least this many superseded versions of each entry.", valueName: "n"))
    var versions: Int?

    func validate() throws {
        if let problem = RetentionPolicy(days: days ?? 0, versions: versions ?? 0).problem {
            throw ValidationError(problem)
        }
    }

    func run() throws {
        let days = self.days
        let versions = self.versions
        let policy: RetentionPolicy
        do {
            policy = try target.with { (container) async throws(ContainerProtocolError) in
                var policy = try await container.retention()
                guard days != nil || versions != nil else { return policy }
                policy.days = days ?? policy.days
                policy.versions = versions ?? policy.versions
                try await container.setRetention(policy)
                return policy
            }
        } catch { throw fail(error) }
        print("\(target.container): retention \(policy)")
    }
}

private func printJSON<T: Encodable>(_ value: T) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self))
}
