import ArgumentParser
import Foundation
import SyncFS

/// `pause MOUNT [--for DURATION] [--all]`: uploads and the change feed stop until `resume`.
struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause a mount's uploads and change feed (with --all, its downloads too) until `resume`.",
        discussion: """
            MOUNT is the mount point or a path inside the mount. Work in the folder goes on: \
            writes and creates are queued as always, and reads of placeholders still download \
            (with --all they fail with ENETDOWN, as offline). The pause survives an unmount and \
            a restart; `sync` on a paused mount exits 75, and unmounting it leaves the queue for \
            the next mount. Pausing a paused mount replaces its pause. Exit codes: 0 paused; 64 \
            a bad --for; 65 MOUNT is not in a SyncFS mount with a running daemon; 75 the daemon \
            is busy or could not record the pause; 77 not allowed.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it.")
    var mountpoint: String

    @Option(
        name: .customLong("for"),
        help: ArgumentHelp(
            "Resume by itself after this long: like 30m, 2h, 1h30m, 90s or 1d.",
            valueName: "duration"))
    var duration: String?

    @Flag(help: "Pause downloads too: a read of a placeholder fails with ENETDOWN, as offline.")
    var all = false

    func validate() throws {
        if let duration, case .failure(let error) = DurationText.seconds(duration) {
            throw ValidationError(TerminalText.safe(error.description))
        }
    }

    func run() throws {
        var request = ControlRequest(.pause)
        if let duration, case .success(let seconds) = DurationText.seconds(duration) { request.pauseSeconds = seconds }
        request.pauseAll = all
        let (mount, reply) = try PauseRequest.send(request, mountpoint)
        guard let status = reply.status else { return }
        let queued = HumanUnits.count(status.pendingEntries, "change")
        print(
            TerminalText.safe(
                "\(mount): \(PauseLine.text(status.paused) ?? "paused"); \(queued) queued; "
                    + "`syncfs-mount resume \(mount)` ends it"))
    }
}

/// `resume MOUNT`: a paused mount syncs again.
struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "End a mount's pause: the queue uploads and the change feed is read again.",
        discussion: """
            MOUNT is the mount point or a path inside the mount. A mount that is not paused is \
            left as it is (says so). Exit codes: 0 resumed, or was not paused; 65 MOUNT is not in \
            a SyncFS mount with a running daemon; 75 the daemon is busy or could not record the \
            resume; 77 not allowed.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it.")
    var mountpoint: String

    func run() throws {
        let (mount, reply) = try PauseRequest.send(ControlRequest(.resume), mountpoint)
        let resumed = (reply.action?.files ?? 0) > 0
        print(TerminalText.safe(resumed ? "\(mount): resumed" : "\(mount): was not paused"))
    }
}

/// One `pause` or `resume` request, with the documented exit codes.
enum PauseRequest {
    static func send(_ request: ControlRequest, _ path: String) throws -> (mount: String, reply: ControlReply) {
        do {
            let mount = try MountedPath.resolve(path)
            switch ControlClient.ask(request, mountpoint: mount.mountpoint) {
            case .success(let reply):
                if let error = reply.error {
                    let kind: MountError.Kind =
                        error.hasPrefix("not allowed")
                        ? .permissionDenied : reply.retryable == true ? .busy : .badInput
                    throw MountError(kind, TerminalText.safe(error))
                }
                return (mount.mountpoint, reply)
            case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
            case .failure(let failure): throw MountError(.badInput, "\(failure)")
            }
        } catch let error as MountError {
            throw fail(error)
        }
    }
}

/// The pause as `status` and `pause` say it: `paused (until 21:30)`, `paused`, `paused (all
/// transfers, until …)`; nil when not paused.
enum PauseLine {
    static func text(_ paused: PauseStatus?) -> String? {
        guard let paused else { return nil }
        var details: [String] = []
        if paused.all { details.append("all transfers") }
        if let until = paused.until { details.append("until \(LocalTime.local(until, seconds: false))") }
        return details.isEmpty ? "paused" : "paused (\(details.joined(separator: ", ")))"
    }
}
