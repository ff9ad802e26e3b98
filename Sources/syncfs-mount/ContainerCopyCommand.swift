import ArgumentParser
import Foundation
import Glibc
import SyncBackend
import SyncPostgres

/// `syncfs-mount container copy SRC DST [--database URL --chunk-store LOCATION]`: moves a
/// container between backends (doc/CLI.md, doc/DEPLOY.md "Moving a container").
struct ContainerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "container",
        abstract: "Work on whole containers (move one between backends).",
        subcommands: [
            ContainerCopyCommand.self, ContainerGCCommand.self, ContainerStatsCommand.self,
            ContainerRetentionCommand.self,
        ]
    )
}

/// `container copy SRC DST`: every entry (each at its newest version, tombstones included, with
/// its ID, version and device) and every chunk they name, from a local container directory or a
/// database container (`db:NAME`, in `--database` with chunks in `--chunk-store`) to the other.
///
/// Contract:
/// - The destination must not hold a container (a local path must be missing or an empty
///   directory; a database name must be free): refused with 65 before anything is written.
/// - The copy is staged (`ROOT/.NAME.syncfs-copy`, or the database name `.syncfs-copy.NAME`,
///   which no client can name) and published only when complete, by one rename; an interrupted
///   copy is resumed by running the same command again (the chunks already stored are kept,
///   the entries imported again). A staged copy of a different container is discarded.
/// - Every chunk is verified (decoded, hashed) before it is stored; a damaged one stops the copy
///   (65) and nothing is published. A source that changes during the copy is refused (75): stop
///   what writes to it first.
/// - The copy keeps the container ID and versions: mounts of the source carry on against the
///   destination (point them at the new server) without re-attaching.
/// - Reports entries, the version, chunks copied and their bytes on standard error.
struct ContainerCopyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy a container, with every entry and chunk, to another backend.",
        discussion: """
            SRC and DST are each a local container directory or db:NAME, a container of the \
            PostgreSQL store --database URL whose chunks are in --chunk-store LOCATION (as for \
            serve). DST must not hold a container. The copy is published only when complete; run \
            the same command again to resume an interrupted one. Stop the servers and mounts that \
            write to SRC first.
            """
    )

    @Argument(help: "The container to copy: a directory, or db:NAME.")
    var source: String

    @Argument(help: "Where to: a new (or empty) directory, or db:NAME (a name not taken).")
    var destination: String

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
            LocationCheck.directoryProblem(source, option: "the source"),
            LocationCheck.directoryProblem(destination, option: "the destination"),
            LocationCheck.chunkStoreProblem(chunkStore))
        let ends = [CopyEnd(source), CopyEnd(destination)]
        for end in ends {
            if case .database(let name) = end, !ContainerName.isValid(name) {
                throw ValidationError(
                    "'\(name)' is not a container name (1-64 bytes of A-Z a-z 0-9 . _ -, no leading .)")
            }
        }
        let usesDatabase = ends.contains { $0.isDatabase }
        if usesDatabase, database == nil || chunkStore == nil {
            throw ValidationError("db:NAME needs --database URL and --chunk-store LOCATION")
        }
        if !usesDatabase, database != nil || chunkStore != nil {
            throw ValidationError("--database and --chunk-store go with a db:NAME source or destination")
        }
        if ends[0].sameContainer(as: ends[1]) {
            throw ValidationError("the source and the destination are the same container")
        }
    }

    func run() throws {
        makeFilesPrivate()
        do throws(BackendFailure) {
            var opened: DatabaseBackend.Opened?
            if let database, let chunkStore {
                opened = try DatabaseBackend.open(try DatabaseBackend.settings(database), chunkStore: chunkStore)
            }
            defer { opened?.shutdown() }
            let source = try CopyEnd(self.source).openSource(store: opened?.store)
            let staged = try CopyEnd(destination).stage(for: source, store: opened?.store)
            if staged.resumed { printError("resuming an interrupted copy into \(destination)") }
            let report = try copy(from: source, to: try staged.take())
            try staged.publish()
            printError(
                "copied \(report.entries) entries (version \(report.version)) and \(report.chunksCopied) chunks "
                    + "(\(report.bytesCopied) bytes stored, \(report.chunksPresent) chunks already there) "
                    + "from \(self.source) to \(destination)")
        } catch {
            throw fail(error)
        }
    }

    private func copy(from source: any Container, to destination: any ImportableContainer) throws(BackendFailure)
        -> ContainerCopyReport
    {
        let result = blockOn { () async -> Result<ContainerCopyReport, ContainerCopyError> in
            do throws(ContainerCopyError) {
                return .success(try await ContainerCopier.copy(from: source, to: destination))
            } catch { return .failure(error) }
        }
        switch result {
        case .success(let report): return report
        case .failure(let error):
            let status: ExitStatus
            switch error {
            case .damagedChunk, .damagedEntry: status = .badInput
            case .sourceChanged: status = .temporaryFailure
            case .source(let inner): status = inner.isRetryable ? .temporaryFailure : .badInput
            case .destination(let inner): status = inner.isRetryable ? .temporaryFailure : .cannotCreate
            }
            throw BackendFailure(status, "\(error.description) (the copy was not published; run it again to resume)")
        }
    }
}
