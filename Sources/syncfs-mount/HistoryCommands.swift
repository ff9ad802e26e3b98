import ArgumentParser
import Foundation
import SyncFS

/// `versions PATH [--json]`: the kept versions of an entry (doc/CLI.md, doc/SEMANTICS.md
/// "Version history and the trash").
struct VersionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versions",
        abstract: "List the versions of a file or folder the container keeps, newest first.",
        discussion: """
            One line per version: its number (for `restore --version`), when the container \
            committed it, the size, the device that made it and what it changed. Exit codes: 0 \
            listed; 65 PATH is not in a SyncFS mount with a running daemon, does not exist, or \
            is not in the container yet; 75 the container did not answer; 77 not allowed.
            """
    )

    @Argument(help: "A file, folder or symlink inside a SyncFS mount.")
    var path: String

    @Flag(help: "Print one line of JSON.")
    var json = false

    func run() throws {
        let reply = try HistoryRequest.send(path) { ControlRequest(.versions, path: $0.relative) }
        guard let listing = reply.history else { throw fail(MountError(.failed, "the daemon gave no answer")) }
        if json { return print(HistoryRequest.json(listing)) }
        for version in listing.versions {
            let when = HistoryRequest.time(version.committedAt)
            let size = version.kind == "file" ? HumanUnits.bytes(version.size) : version.kind
            let current = version.current ? " (current)" : ""
            print(
                "\(version.version)\t\(when)\t\(size)\t\(TerminalText.safe(DeviceLabel.text(version.device, name: version.deviceName)))\t\(version.change)\(current)"
            )
        }
    }
}

/// `trash MOUNT [--json]`: the deleted entries the container keeps.
struct TrashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trash",
        abstract: "List the deleted files and folders the container keeps, newest deletion first.",
        discussion: """
            One line per deleted item: its path, what it was (a folder counts what was deleted \
            with it), when it was deleted, by which device, and its file ID (for `restore --id`). \
            Exit codes: 0 listed; 65 MOUNT is not in a SyncFS mount with a running daemon; 75 the \
            container did not answer; 77 not allowed.
            """
    )

    @Argument(help: "A mount point, or a path inside a mount (default: the current directory).")
    var mountpoint: String = "."

    @Flag(help: "Print one line of JSON (an array).")
    var json = false

    func run() throws {
        let reply = try HistoryRequest.send(mountpoint) { _ in ControlRequest(.trash) }
        let items = reply.trash ?? []
        if json { return print(HistoryRequest.json(items)) }
        for item in items {
            let path = TerminalText.safe(item.path ?? "…/" + item.name)
            let what =
                item.kind == "directory"
                ? "folder, \(HumanUnits.count(item.entries - 1, "entry", "entries")), \(HumanUnits.bytes(item.bytes))"
                : item.kind == "file" ? HumanUnits.bytes(item.bytes) : item.kind
            print(
                "\(path)\t\(what)\tdeleted \(HistoryRequest.time(item.deletedAt)) by \(TerminalText.safe(DeviceLabel.text(item.device, name: item.deviceName)))\t\(item.fileID)"
            )
        }
    }
}

/// `restore PATH [--version V] [--to NEWPATH]`, `restore --id FILEID MOUNT`: brings a version or
/// a deleted entry back as a new change.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Bring back an older version of a file, or a deleted file or folder (with what was deleted with it).",
        discussion: """
            The restore is a new change made from this mount: it syncs to every machine and leaves \
            the history as it was (the version it replaces stays listed). PATH that exists needs \
            --version (see `syncfs-mount versions`); PATH that does not is looked up in the trash \
            (the newest deletion of that path), or name a deleted entry with --id FILEID (see \
            `syncfs-mount trash`) and the mount. A deleted folder comes back with the entries \
            deleted with it. --to NEWPATH brings it back elsewhere (as a copy, for an existing \
            PATH). It returns once the folder shows the result. Exit codes: 0 restored; 65 bad \
            input, nothing to restore, or something could not be brought back (listed); 75 the \
            container did not answer; 77 not allowed.
            """
    )

    @Argument(help: "The file or folder to bring back (with --id: the mount).")
    var path: String

    @Option(
        help: ArgumentHelp(
            "The version to bring back: a number from `versions`, or `previous` (the one before the current version). Default for a deleted entry: its last state.",
            valueName: "v"))
    var version: RestoreVersion?

    @Option(
        name: .customLong("id"), help: ArgumentHelp("A deleted entry's file ID, from `trash`.", valueName: "fileid"))
    var fileID: String?

    @Option(name: .customLong("to"), help: ArgumentHelp("Put it here instead (must not exist).", valueName: "newpath"))
    var destination: String?

    func run() throws {
        let wanted = try chosenVersion()
        let reply = try HistoryRequest.send(path) { target throws(MountError) in
            var destinationInMount: String?
            if let destination {
                let resolved = try MountedPath.resolve(destination)
                guard resolved.mountpoint == target.mountpoint else {
                    throw MountError(.badInput, "--to \(destination) is not in the mount at \(target.mountpoint)")
                }
                destinationInMount = resolved.relative
            }
            return ControlRequest(
                .restore, path: fileID == nil ? target.relative : nil, version: wanted, fileID: fileID,
                destination: destinationInMount)
        }
        guard let report = reply.restore else { throw fail(MountError(.failed, "the daemon gave no answer")) }
        for path in report.restored { print("restored \(TerminalText.safe(path))") }
        if !report.restored.isEmpty, !report.applied {
            print(
                "(in the container; the folder shows it once this mount catches up — on a paused mount, after `syncfs-mount resume`)"
            )
        }
        for skipped in report.skipped {
            printError("syncfs-mount restore: \(TerminalText.safe(skipped.path)): \(TerminalText.safe(skipped.reason))")
        }
        if report.restored.isEmpty || !report.skipped.isEmpty { throw ExitCode(.badInput) }
    }

    /// The version number to send: `previous` is the second of `versions`' listing of an existing
    /// PATH; for a deleted entry (PATH missing, or --id) it is its last state, what no number asks.
    private func chosenVersion() throws -> UInt64? {
        switch version {
        case nil: return nil
        case .number(let number): return number
        case .previous:
            var info = stat()
            if fileID != nil || (lstat(path, &info) != 0 && errno == ENOENT) { return nil }
            let reply = try HistoryRequest.send(path) { ControlRequest(.versions, path: $0.relative) }
            guard let listing = reply.history else { throw fail(MountError(.failed, "the daemon gave no answer")) }
            guard listing.versions.count > 1 else {
                throw fail(
                    MountError(
                        .badInput,
                        "\(TerminalText.safe(path)) has no version before the current one (see `syncfs-mount versions`)"
                    ))
            }
            return listing.versions[1].version
        }
    }
}

/// `restore --version`: a version number, or `previous`.
enum RestoreVersion: ExpressibleByArgument, Equatable {
    case number(UInt64)
    case previous

    init?(argument: String) {
        if argument == "previous" {
            self = .previous
        } else if let number = UInt64(argument) {
            self = .number(number)
        } else {
            return nil
        }
    }
}

/// One history request, with the documented exit codes.
enum HistoryRequest {
    static func send(_ path: String, _ request: (MountedPath) throws(MountError) -> ControlRequest) throws
        -> ControlReply
    {
        do {
            let target = try MountedPath.resolve(path)
            switch ControlClient.ask(try request(target), mountpoint: target.mountpoint) {
            case .success(let reply):
                if let error = reply.error {
                    throw MountError(reply.retryable == true ? .busy : .badInput, TerminalText.safe(error))
                }
                return reply
            case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
            case .failure(let failure): throw MountError(.badInput, "\(failure)")
            }
        } catch let error as MountError {
            throw fail(error)
        }
    }

    static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }

    /// A container time (nanoseconds since the epoch) as local time; "unknown" for 0.
    static func time(_ nanoseconds: Int64) -> String {
        guard nanoseconds > 0 else { return "unknown" }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(nanoseconds) / 1e9))
    }
}

/// How `versions` and `trash` name a device: this mount's own by its name, another by its ID
/// (the container's history holds device IDs only).
enum DeviceLabel {
    static func text(_ identity: String, name: String?) -> String {
        name.map { "\($0) (this device)" } ?? "device \(identity)"
    }
}
