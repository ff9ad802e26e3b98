import ArgumentParser
import Foundation
import SyncBackend
import SyncServer

/// `syncfs-mount token create|list|revoke`: the access tokens of a server root
/// (`ROOT/.syncfs-server/tokens.db`) or, with `--database URL`, of a PostgreSQL store
/// (`DatabaseTokens`; doc/CLI.md). A running server sees every change at once.
/// Each runs with umask 0o077 (`makeFilesPrivate`).
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Manage the access tokens of a server root.",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    /// `token create --root DIR --container NAME [--label TEXT]`: prints the new token (and only
    /// it) on standard output; its ID goes to standard error. Creates the container if missing.
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a token for one container (created if missing); print it once.")

        @Option(help: ArgumentHelp("The server root (must exist).", valueName: "dir"))
        var root: String?

        @Option(help: ArgumentHelp("Instead of --root: the PostgreSQL store (made by server-init).", valueName: "url"))
        var database: String?

        func validate() throws { try checkTokenPlace(root: root, database: database) }

        @Option(help: ArgumentHelp("The container the token opens: ROOT/NAME.", valueName: "name"))
        var container: String

        @Option(help: ArgumentHelp("A note for `token list` (who or what uses the token).", valueName: "text"))
        var label: String = ""

        func run() throws {
            makeFilesPrivate()
            guard ContainerName.isValid(container) else {
                throw fail(
                    SyncServerError(
                        .badInput,
                        "'\(container)' is not a container name (1-64 bytes of A-Z a-z 0-9 . _ -, no leading .)"))
            }
            guard label.utf8.count <= 200,
                !label.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw fail(SyncServerError(.badInput, "--label must have at most 200 bytes and no control characters"))
            }
            if let database { return try createInDatabase(database) }
            let root = try checkedRoot(self.root ?? "")
            do {
                _ = try LocalContainer.openOrCreate(at: root + "/" + container)
            } catch {
                switch error {
                case .notAContainer, .unsupportedFormat: throw fail(SyncServerError(.badInput, error.description))
                case .cannotCreate: throw fail(SyncServerError(.cannotCreate, error.description))
                }
            }
            do {
                let (id, token) = try TokenStore(root: root).create(container: container, label: label)
                print(token)
                printError("token \(id) for container '\(container)' created; it is shown only this once")
            } catch {
                throw fail(error)
            }
        }
    }

    /// `token list --root DIR [--json]`: every token ever made (never the tokens themselves).
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the tokens (IDs, containers, labels).")

        @Option(help: ArgumentHelp("The server root (must exist).", valueName: "dir"))
        var root: String?

        @Option(help: ArgumentHelp("Instead of --root: the PostgreSQL store (made by server-init).", valueName: "url"))
        var database: String?

        func validate() throws { try checkTokenPlace(root: root, database: database) }

        @Flag(help: "Print one JSON array: id, container, label, created, revoked (Unix seconds or null).")
        var json = false

        func run() throws {
            makeFilesPrivate()
            let records: [TokenStore.Record]
            let place: String
            if let database {
                do throws(BackendFailure) {
                    records = try withDatabaseTokens(database) { tokens, _ throws(BackendFailure) in try tokens.list() }
                } catch {
                    throw fail(error)
                }
                place = "the database"
            } else {
                let root = try checkedRoot(self.root ?? "")
                do {
                    records = try TokenStore.openIfPresent(root: root)?.list() ?? []
                } catch {
                    throw fail(error)
                }
                place = root
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                let data = (try? encoder.encode(records)) ?? Data("[]".utf8)
                print(String(decoding: data, as: UTF8.self))
                return
            }
            guard !records.isEmpty else { return printError("no tokens in \(place)") }
            print(
                "ID        CONTAINER                         CREATED               STATUS                        LABEL")
            for record in records {
                let status = record.revoked.map { "revoked " + Self.time($0) } ?? "valid"
                print(
                    [
                        record.id.padded(8), record.container.padded(33), Self.time(record.created).padded(21),
                        status.padded(29), record.label,
                    ].joined(separator: " "))
            }
        }

        private static func time(_ seconds: Int64) -> String {
            Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
        }
    }

    /// `token revoke --root DIR ID`: the token stops working at once, also for a running server.
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token by its ID (see `token list`).")

        @Option(help: ArgumentHelp("The server root (must exist).", valueName: "dir"))
        var root: String?

        @Option(help: ArgumentHelp("Instead of --root: the PostgreSQL store (made by server-init).", valueName: "url"))
        var database: String?

        func validate() throws { try checkTokenPlace(root: root, database: database) }

        @Argument(help: "The token's ID (8 hex digits).")
        var id: String

        func run() throws {
            makeFilesPrivate()
            if let database { return try revokeInDatabase(database) }
            let root = try checkedRoot(self.root ?? "")
            do throws(SyncServerError) {
                guard let store = try TokenStore.openIfPresent(root: root) else {
                    throw SyncServerError(.badInput, "no token with ID '\(id)': \(root) has no tokens")
                }
                if try store.revoke(id: id) {
                    printError("token \(id) revoked")
                } else {
                    printError("token \(id) was already revoked")
                }
            } catch {
                throw fail(error)
            }
        }
    }
}

/// Sets the umask to 0o077: whatever `serve` and `token` create (containers, chunk files, the
/// token database) is readable by the server's user alone, whatever the caller's umask was.
func makeFilesPrivate() {
    umask(0o077)
}

/// Exactly one of `--root` and `--database` (exit 64 otherwise).
private func checkTokenPlace(root: String?, database: String?) throws {
    switch (root, database) {
    case (nil, nil): throw ValidationError("give --root DIR (a server root) or --database URL")
    case (_?, _?): throw ValidationError("--root and --database exclude each other: give one")
    default: return
    }
}

/// `root` made absolute; exit 65 unless it is an existing directory.
private func checkedRoot(_ root: String) throws -> String {
    let path = absolutePath(root)
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw fail(SyncServerError(.badInput, "the root \(path) is not an existing directory"))
    }
    return path
}

extension String {
    fileprivate func padded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
