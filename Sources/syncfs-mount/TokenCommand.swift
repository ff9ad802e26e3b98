import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
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
    /// That is a container token (an editor's rights, no user, no expiry). With `--user NAME`
    /// instead, a user's token (`createForUser`): scoped to containers and a role, expiring.
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a token for a user (or a container token); print it once.")

        @Option(help: ArgumentHelp("The server root (must exist).", valueName: "dir"))
        var root: String?

        @Option(help: ArgumentHelp("Instead of --root: the PostgreSQL store (made by server-init).", valueName: "url"))
        var database: String?

        func validate() throws {
            try checkTokenPlace(root: root, database: database)
            guard !container.isEmpty else { throw ValidationError("give --container NAME") }
            if user == nil {
                guard container.count == 1 else { throw ValidationError("a container token opens one --container") }
                guard role == nil, expires == nil, !noExpiry else {
                    throw ValidationError("--role, --expires and --no-expiry are for a user's token (--user NAME)")
                }
            }
            guard expires == nil || !noExpiry else {
                throw ValidationError("--expires and --no-expiry exclude each other")
            }
            if let expires, case .failure(let error) = DurationText.seconds(expires) {
                throw ValidationError(error.description)
            }
        }

        @Option(
            help: ArgumentHelp(
                "The container the token opens: ROOT/NAME (with --user: repeat it for several).", valueName: "name"))
        var container: [String] = []

        @Option(help: ArgumentHelp("Make a user's token (see `user add`, `member add`).", valueName: "name"))
        var user: String?

        @Option(
            help: ArgumentHelp(
                "With --user: viewer, editor or admin, at most the user's role in each container (default: that role).",
                valueName: "role"))
        var role: AccessRole?

        @Option(
            help: ArgumentHelp(
                "With --user: how long it works, like 30d or 12h (default 90d, at most 365d).", valueName: "duration"))
        var expires: String?

        @Flag(help: "With --user: a service token that never expires (listed as such).")
        var noExpiry = false

        @Option(help: ArgumentHelp("A note for `token list` (who or what uses the token).", valueName: "text"))
        var label: String = ""

        func run() throws {
            makeFilesPrivate()
            if user != nil { return try createForUser() }
            let container = container.first ?? ""
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
            let label = label
            let (id, token) = try AccessPlaceOptions(root: root, database: nil).withAdmin {
                admin throws(SyncServerError) in
                try await admin.createContainerToken(container: container, label: label)
            }
            print(token)
            printError("token \(id) for container '\(container)' created; it is shown only this once")
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

        @Flag(
            help:
                "Print one JSON array: id, kind, user, device, container, containers, role, label, created, expires, revoked, lastUsed, lastAddress (times in Unix seconds or null)."
        )
        var json = false

        func run() throws {
            makeFilesPrivate()
            let lines: [TokenLine]
            let place = AccessPlaceOptions(root: root, database: database)
            lines = try place.withAdmin { admin throws(SyncServerError) in try await admin.tokens() }
                .map(TokenLine.init)
            if json { return print(jsonLine(lines)) }
            guard !lines.isEmpty else {
                return printError("no tokens in \(database == nil ? root ?? "" : "the database")")
            }
            let widths = [8, 9, 16, 7, 24, 21, 29]
            print(tableRow(["ID", "KIND", "USER", "ROLE", "CONTAINERS", "EXPIRES", "STATUS", "LABEL"], widths: widths))
            for line in lines {
                let status = line.revoked.map { "revoked " + isoTime($0) } ?? "valid"
                print(
                    tableRow(
                        [
                            line.id, line.kind, line.user ?? "-", line.role.rawValue,
                            line.containers.joined(separator: ","), line.expires.map(isoTime) ?? "never", status,
                            TerminalText.safe(line.label),
                        ], widths: widths))
            }
        }
    }

    /// One token as `token list` prints it: `kind` is `container` (made with `--container` alone:
    /// an editor's rights there, no user, no expiry), `user` (expiring) or `service` (a user's
    /// token without expiry). `container` is the first of `containers`, as older lists had it.
    struct TokenLine: Codable, Equatable {
        var id: String
        var kind: String
        var user: String?
        var device: String?
        var container: String
        var containers: [String]
        var role: AccessRole
        var label: String
        var created: Int64
        var expires: Int64?
        var revoked: Int64?
        var lastUsed: Int64?
        var lastAddress: String?

        init(_ record: TokenRecord) {
            id = record.id
            kind = record.isLegacy ? "container" : record.expires == nil ? "service" : "user"
            user = record.user
            device = record.device
            container = record.containers.first ?? ""
            containers = record.containers
            role = record.role
            label = record.label
            created = record.created
            expires = record.expires
            revoked = record.revoked
            lastUsed = record.lastUsed
            lastAddress = record.lastAddress
        }

        init(_ record: TokenStore.Record) {
            self.init(
                TokenRecord(
                    id: record.id, user: nil, device: nil, containers: [record.container], role: .editor,
                    label: record.label, created: record.created, expires: nil, revoked: record.revoked))
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
            if database == nil, let root, FileManager.default.fileExists(atPath: absolutePath(root)),
                !FileManager.default.fileExists(atPath: TokenStore.path(root: absolutePath(root)))
            {
                throw fail(SyncServerError(.badInput, "no token with ID '\(id)': \(root) has no tokens"))
            }
            let id = id
            let revoked = try AccessPlaceOptions(root: root, database: database).withAdmin {
                admin throws(SyncServerError) in try await admin.revokeToken(id)
            }
            printError(revoked ? "token \(id) revoked" : "token \(id) was already revoked")
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
