import ArgumentParser
import Foundation
import Glibc
import SyncBackend
import SyncPostgres
import SyncServer
import SyncServerPostgres

/// `syncfs-mount server-init --database URL [--chunk-store LOCATION] [--create NAME [--token | --tokens DIR]]`:
/// makes or migrates the SyncFS schema in a PostgreSQL database (the only command that does;
/// `serve` refuses a database without it), and optionally a container and a token for it
/// (doc/DEPLOY.md).
///
/// Contract: safe to run again and from several hosts at once (the schema's migrations are
/// transactional); `--create` of an existing container keeps it (and says so); a new token is
/// printed on standard output, once. Credentials as for `serve` (never on the command line).
struct ServerInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server-init",
        abstract: "Make or migrate the server's schema in PostgreSQL; optionally a container and a token.",
        discussion: """
            The password comes from PGPASSWORD, PGPASSFILE or ~/.pgpass (never the URL). With \
            --chunk-store, checks that the bucket answers (or makes the local chunk directory). \
            With --create NAME, makes the container NAME if it is missing; with --token too, \
            prints a new token for it, kept in the database (or, with --tokens DIR, in DIR's token \
            database, as `serve --tokens DIR` reads them).
            """
    )

    @Option(help: ArgumentHelp("The database: postgres://[USER@]HOST[:PORT]/DB[?sslmode=…].", valueName: "url"))
    var database: String

    @Option(
        name: .customLong("chunk-store"),
        help: ArgumentHelp(
            "Where chunks go: s3://BUCKET[/PREFIX]?endpoint=URL&region=R, or a directory.", valueName: "location"))
    var chunkStore: String?

    @Option(help: ArgumentHelp("Make this container if it is missing.", valueName: "name"))
    var create: String?

    @Option(help: ArgumentHelp("The token directory (as `serve --tokens`): print a new token.", valueName: "dir"))
    var tokens: String?

    @Flag(help: "With --create: print a new token for the container, kept in the database.")
    var token = false

    @Option(help: ArgumentHelp("A note for `token list`.", valueName: "text"))
    var label: String = ""

    func validate() throws {
        try LocationCheck.check(
            LocationCheck.directoryProblem(tokens, option: "--tokens"), LocationCheck.chunkStoreProblem(chunkStore))
        if let create, !ContainerName.isValid(create) {
            throw ValidationError("'\(create)' is not a container name (1-64 bytes of A-Z a-z 0-9 . _ -, no leading .)")
        }
        if tokens != nil, create == nil { throw ValidationError("--tokens goes with --create NAME") }
        if token, create == nil { throw ValidationError("--token goes with --create NAME") }
        if token, tokens != nil {
            throw ValidationError("--token (in the database) and --tokens DIR exclude each other")
        }
    }

    func run() throws {
        makeFilesPrivate()
        do throws(BackendFailure) {
            let settings = try DatabaseBackend.settings(database)
            try DatabaseBackend.initialize(settings)
            printError("the SyncFS schema in \(settings) is up to date")
            guard let create else {
                if let chunkStore {
                    try DatabaseBackend.checkChunkStore(chunkStore, create: true)
                    printError("the chunk store answers")
                }
                return
            }
            let opened = try DatabaseBackend.open(settings, chunkStore: chunkStore, createDirectory: true)
            defer { opened.shutdown() }
            let made = try DatabaseBackend.ensureContainer(create, in: opened.store)
            printError(made ? "container '\(create)' created" : "container '\(create)' already exists")
            if token {
                let (create, label) = (create, label)
                let (id, made) = try AccessPlaceOptions.run(AccountAdmin(store: PostgresAccess(store: opened.store))) {
                    admin throws(SyncServerError) in
                    try await admin.createContainerToken(container: create, label: label)
                }
                print(made)
                printError("token \(id) for container '\(create)' created; it is shown only this once")
            }
            if let tokens {
                let directory = absolutePath(tokens)
                if mkdir(directory, 0o700) != 0, errno != EEXIST {
                    throw BackendFailure(
                        .cannotCreate, "cannot create \(directory): \(String(cString: strerror(errno)))")
                }
                do {
                    let (id, token) = try TokenStore(root: directory).create(container: create, label: label)
                    print(token)
                    printError("token \(id) for container '\(create)' created; it is shown only this once")
                } catch {
                    throw BackendFailure(error.exitStatus, error.description)
                }
            }
        } catch {
            throw fail(error)
        }
    }
}
