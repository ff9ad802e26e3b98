import ArgumentParser
import Foundation
import Glibc
import SyncBackend
import SyncFS

/// `syncfs-mount list [--json]`: this user's mounts, and the state directories whose changes wait
/// for a mount (doc/CLI.md, "`syncfs-mount list`").
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List your SyncFS mounts, and state directories with changes waiting to be uploaded.",
        discussion: """
            Each mount shows its container, mount point, whether it is online and how many changes \
            it has queued (asked from its daemon); a mount whose daemon died is shown as dead, with \
            the command that mounts it again. Then every state directory under \
            $XDG_STATE_HOME/syncfs (or ~/.local/state/syncfs) that holds changes not uploaded yet \
            while nothing mounts it, with the command that resumes it.
            """
    )

    @Flag(help: "Print one JSON object (documented in doc/CLI.md).")
    var json = false

    /// One mount, as `list --json` prints it.
    struct Mount: Codable {
        var container: String
        var mountpoint: String
        var stateDirectory: String
        var pid: Int32
        /// `live`, `not-answering` (the process is there, its control socket is not) or `dead`.
        var state: String
        var online: Bool?
        var queued: Int?
        var queuedBytes: Int64?
        /// For a dead mount: the command that clears it and carries on.
        var resume: String?
    }

    struct Listing: Codable {
        var mounts: [Mount]
        var waiting: [WaitingStateDirectory]
        /// Registry or state root entries not read, and why.
        var skipped: [String]
    }

    func run() throws {
        var skipped: [String] = []
        var mounts: [Mount] = []
        switch MountRecord.all() {
        case .success(let records): mounts = records.map(Self.describe)
        case .failure(let failure): skipped.append(failure.description)
        }
        let scan = StateDirectoryScan.scan()
        skipped += scan.skipped
        // A dead mount's state directory shows once, as the dead mount.
        let shown = Set(mounts.map { URL(fileURLWithPath: $0.stateDirectory).standardizedFileURL.path })
        let waiting = scan.waiting.filter {
            !shown.contains(URL(fileURLWithPath: $0.stateDirectory).standardizedFileURL.path)
        }
        let listing = Listing(mounts: mounts, waiting: waiting, skipped: skipped)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: (try? encoder.encode(listing)) ?? Data(), as: UTF8.self))
        } else {
            printText(listing)
        }
    }

    private static func describe(_ record: MountRecord) -> Mount {
        var mount = Mount(
            container: record.container, mountpoint: record.mountpoint, stateDirectory: record.stateDirectory,
            pid: record.pid, state: "dead")
        guard record.pid > 0, kill(record.pid, 0) == 0 || errno == EPERM else {
            mount.resume = StateDirectoryScan.resumeCommand(
                container: record.container, mountpoint: record.mountpoint, stateDirectory: record.stateDirectory,
                tokenFile: record.tokenFile, caFile: record.caFile)
            // What its queue held when it died (read-only; the record is this user's own).
            mount.queued =
                StateDatabaseReader.summary(databasePath: StateDirectory(path: record.stateDirectory).databasePath)?
                .queued
            return mount
        }
        guard let status = askStatus(record.mountpoint) else {
            mount.state = "not-answering"
            return mount
        }
        mount.state = "live"
        mount.online = status.online
        mount.queued = status.pendingEntries
        mount.queuedBytes = status.pendingBytes
        return mount
    }

    /// The daemon's `status`, or nil if it does not answer within `timeout` seconds (a stopped
    /// or stuck daemon must not hang `list`; the asking thread is left to end with the process).
    private static func askStatus(_ mountpoint: String, timeout: Double = 5) -> SyncStatus? {
        final class Answer: @unchecked Sendable {
            let lock = NSLock()
            var status: SyncStatus?
        }
        let answer = Answer()
        let asker = Worker.start("syncfs-list-status") { _ in
            if case .success(let reply) = ControlClient.ask(ControlRequest(.status), mountpoint: mountpoint) {
                answer.lock.withLock { answer.status = reply.status }
            }
        }
        guard asker.join(within: .seconds(timeout)) else { return nil }
        return answer.lock.withLock { answer.status }
    }

    private func printText(_ listing: Listing) {
        for line in listing.skipped { printError("syncfs-mount: skipped \(printable(line))") }
        if listing.mounts.isEmpty && listing.waiting.isEmpty {
            print("No SyncFS mounts, and no state directory has changes waiting.")
            return
        }
        for mount in listing.mounts {
            let what: String
            switch mount.state {
            case "live":
                what = "\(mount.online == true ? "online" : "offline"), \(changes(mount.queued ?? 0)) queued"
            case "dead":
                let queued = mount.queued.map { ", \(changes($0)) queued" } ?? ""
                what =
                    "DEAD (its daemon, pid \(mount.pid), is gone\(queued)); mount it again with: "
                    + printable(mount.resume ?? "")
            default:
                what = "not answering (daemon pid \(mount.pid))"
            }
            print("\(printable(mount.mountpoint))  \(printable(mount.container))  \(what)")
        }
        if !listing.waiting.isEmpty {
            if !listing.mounts.isEmpty { print("") }
            print("Not mounted, with changes waiting to be uploaded:")
            for waiting in listing.waiting {
                print(
                    "  \(printable(waiting.stateDirectory))  \(printable(waiting.container))  \(changes(waiting.queued))"
                )
                print("    resume: \(printable(waiting.resume))")
            }
        }
    }
}
