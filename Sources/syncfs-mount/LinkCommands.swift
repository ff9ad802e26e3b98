import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
import SyncServer

extension LinkKind: ExpressibleByArgument {}

/// `syncfs-mount link create|list|revoke`: the share links of a server (doc/CLI.md). A link's
/// secret is printed once, by `create`, and never stored.
struct LinkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "link",
        abstract: "Manage the share links of a server.",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    /// `link create --container C [--path P] --kind K …`: prints the link's path (and only it) on
    /// standard output, or its whole URL with `--server URL`.
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a share link; print it once.")
        @OptionGroup var place: AccessPlaceOptions
        @Option(help: ArgumentHelp("The container.", valueName: "name")) var container: String
        @Option(
            help: ArgumentHelp(
                "What it opens: names below the container's root joined by / (default: the whole container).",
                valueName: "path"))
        var path: String = ""
        @Option(help: ArgumentHelp("view, download (one file) or upload-only (a drop box).", valueName: "kind"))
        var kind: LinkKind
        @Flag(help: "Ask for a password the link's users must give (typed twice).") var password = false
        @Option(help: ArgumentHelp("Read the link's password from this file's first line.", valueName: "file"))
        var passwordFile: String?
        @Option(
            help: ArgumentHelp("How long it works, like 7d or 12h (default 30d, at most 365d).", valueName: "duration"))
        var expires: String?
        @Flag(help: "A link that never expires.") var noExpiry = false
        @Option(help: ArgumentHelp("How many downloads in all (view and download links).", valueName: "n"))
        var maxDownloads: Int64?
        @Option(help: ArgumentHelp("A note for `link list`.", valueName: "text")) var label: String = ""
        @Option(help: ArgumentHelp("Print the whole URL below this server address.", valueName: "url"))
        var server: String?

        func validate() throws {
            guard expires == nil || !noExpiry else {
                throw ValidationError("--expires and --no-expiry exclude each other")
            }
            guard !(password && passwordFile != nil) else {
                throw ValidationError("--password and --password-file exclude each other")
            }
            if let expires, case .failure(let error) = DurationText.seconds(expires) {
                throw ValidationError(error.description)
            }
        }

        func run() throws {
            var secret: String?
            if password || passwordFile != nil {
                secret = try Secrets.read(file: passwordFile, prompt: "Link password: ", confirm: true)
            }
            var expiry = AccountAdmin.Expiry.standard
            if noExpiry { expiry = .never }
            if let expires, case .success(let seconds) = DurationText.seconds(expires) {
                expiry = .after(Int64(seconds))
            }
            let order = AccountAdmin.LinkOrder(
                container: container, prefix: path, kind: kind, password: secret, expiry: expiry,
                maxDownloads: maxDownloads, label: label)
            let (record, linkSecret) = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.createLink(order)
            }
            let linkPath = "/v1/links/" + linkSecret
            if let server {
                var base = server
                while base.hasSuffix("/") { base.removeLast() }
                print(base + linkPath)
            } else {
                print(linkPath)
            }
            let until = record.expires.map { "until \(isoTime($0))" } ?? "without expiry"
            printError(
                "link \(record.id) (\(record.kind.rawValue)) made, \(until); it is shown only this once "
                    + "(doc/PROTOCOL.md \"Share links\" says how to use it)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the share links.")
        @OptionGroup var place: AccessPlaceOptions
        @Option(help: ArgumentHelp("Only this container's.", valueName: "name")) var container: String?
        @Flag(
            help:
                "Print one JSON array: id, container, path, kind, hasPassword, created, expires, maxDownloads, downloads, revoked, createdBy, label."
        )
        var json = false

        func run() throws {
            let container = container
            let links = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.links(container: container)
            }.map(LinkSummary.init)
            if json { return print(jsonLine(links)) }
            guard !links.isEmpty else { return printError("no links") }
            let widths = [8, 16, 11, 8, 21, 9, 7]
            print(
                tableRow(
                    ["ID", "CONTAINER", "KIND", "PASSWORD", "EXPIRES", "DOWNLOADS", "STATUS", "PATH  LABEL"],
                    widths: widths))
            let now = AccessControl.unixNow()
            for link in links {
                let status =
                    link.revoked != nil ? "revoked" : (link.expires.map { $0 <= now } ?? false) ? "expired" : "valid"
                let downloads = "\(link.downloads)" + (link.maxDownloads.map { "/\($0)" } ?? "")
                print(
                    tableRow(
                        [
                            link.id, link.container, link.kind.rawValue, link.hasPassword ? "yes" : "no",
                            link.expires.map(isoTime) ?? "never", downloads, status,
                            "/\(TerminalText.safe(link.path))  \(TerminalText.safe(link.label))",
                        ], widths: widths))
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a share link at once.")
        @OptionGroup var place: AccessPlaceOptions
        @Argument(help: "The link's ID (8 hex digits, from `link list`).") var id: String

        func run() throws {
            let id = id
            let revoked = try place.withAdmin { admin throws(SyncServerError) in
                try await admin.revokeLink(id, container: nil)
            }
            printError(revoked ? "link \(id) revoked" : "link \(id) was revoked already")
        }
    }
}
