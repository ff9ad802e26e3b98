import ArgumentParser
import Foundation
import SyncFS

/// The mount options of the mass-delete guard (doc/CLI.md, `mount`; doc/SEMANTICS.md,
/// "Mass-delete guard").
struct GuardOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Mass-delete guard: hold the uploads when N established files (in the container for a while) are deleted or replaced within the window.",
            valueName: "n"))
    var guardDeletes: Int = GuardThresholds().deletes

    @Option(
        help: ArgumentHelp(
            "Mass-delete guard: also when N established files are rewritten with content that looks encrypted.",
            valueName: "n"))
    var guardRewrites: Int = GuardThresholds().rewrites

    @Option(
        help: ArgumentHelp(
            "Mass-delete guard: also when P percent of the tree are deleted or replaced, and at least --guard-minimum.",
            valueName: "percent"))
    var guardFraction: Double = GuardThresholds().percent

    @Option(help: ArgumentHelp("The fewest deletions the --guard-fraction trips on.", valueName: "n"))
    var guardMinimum: Int = GuardThresholds().minimum

    @Option(help: ArgumentHelp("The mass-delete guard's sliding window.", valueName: "seconds"))
    var guardWindow: Double = GuardThresholds().windowSeconds

    @Option(
        help: ArgumentHelp(
            "How long a file this mount saw arrive counts as new, not established (0: every file is established).",
            valueName: "seconds"))
    var guardAge: Double = GuardThresholds().ageSeconds

    @Flag(help: "No mass-delete guard: deletions go to the container however many there are.")
    var noGuard = false

    var thresholds: GuardThresholds? {
        guard !noGuard else { return nil }
        var thresholds = GuardThresholds()
        thresholds.deletes = guardDeletes
        thresholds.rewrites = guardRewrites
        thresholds.percent = guardFraction
        thresholds.minimum = guardMinimum
        thresholds.windowSeconds = guardWindow
        thresholds.ageSeconds = guardAge
        return thresholds
    }

    func validate() throws {
        if let problem = thresholds?.problem { throw ValidationError(problem) }
    }

    /// The options again, for the daemon's command line.
    var commandLine: [String] {
        if noGuard { return ["--no-guard"] }
        return [
            "--guard-deletes", String(guardDeletes), "--guard-rewrites", String(guardRewrites), "--guard-fraction",
            String(guardFraction), "--guard-minimum", String(guardMinimum), "--guard-window", String(guardWindow),
            "--guard-age", String(guardAge),
        ]
    }
}

/// `release MOUNT`: the changes the mass-delete guard holds go to the container.
struct ReleaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "release",
        abstract: "Let the deletions and replacements the mass-delete guard holds go to the container.",
        discussion: """
            MOUNT is the mount point or a path inside the mount. Everything queued at that moment \
            goes, and is not counted again. Exit codes: 0 released, or nothing was held (says so); \
            65 MOUNT is not in a SyncFS mount with a running daemon; 77 not allowed.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it.")
    var mountpoint: String

    func run() throws {
        let reply = try GuardRequest.send(.release, mountpoint)
        if let action = reply.action {
            print("released: \(HumanUnits.count(action.files, "queued change")) go to the container")
        } else {
            print("nothing is held by the mass-delete guard")
        }
    }
}

/// `discard MOUNT`: the changes the mass-delete guard holds are undone here.
struct DiscardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discard",
        abstract: "Undo the deletions and replacements the mass-delete guard holds: they come back from the container.",
        discussion: """
            MOUNT is the mount point or a path inside the mount. Each held deletion or replacement \
            is replaced by the container's version (a placeholder that downloads when read, or \
            downloaded if pinned) and its queued change dropped; nothing of it is uploaded. Other \
            queued changes stay and go once the guard is released. Exit codes: 0 undone, or \
            nothing was held (says so); 65 MOUNT is not in a SyncFS mount with a running daemon; \
            75 some could not be undone (the container did not answer, a file is in use), or \
            changes sent before the guard tripped were still being committed after 10 s: the \
            guard still holds, run discard again; 77 not allowed.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it.")
    var mountpoint: String

    func run() throws {
        let reply = try GuardRequest.send(.discard, mountpoint)
        if let action = reply.action {
            print("discarded: \(HumanUnits.count(action.files, "held change")) undone from the container")
        } else {
            print("nothing is held by the mass-delete guard")
        }
    }
}

/// One `release` or `discard` request, with the documented exit codes.
enum GuardRequest {
    static func send(_ command: ControlRequest.Command, _ path: String) throws -> ControlReply {
        do {
            let mount = try MountedPath.resolve(path)
            switch ControlClient.ask(ControlRequest(command), mountpoint: mount.mountpoint) {
            case .success(let reply):
                if let error = reply.error { throw MountError(.busy, TerminalText.safe(error)) }
                return reply
            case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
            case .failure(let failure): throw MountError(.badInput, "\(failure)")
            }
        } catch let error as MountError {
            throw fail(error)
        }
    }
}

/// The guard's line of `status` (none while it watches and nothing waits).
enum GuardStatusLine {
    static func text(_ status: GuardStatus?, mountpoint: String) -> String? {
        guard let status else { return nil }
        if status.held {
            let since = status.heldSince.map { " since \(LocalTime.local($0))" } ?? ""
            let count =
                status.heldChanges.map {
                    ": \(HumanUnits.count($0, "deletion or replacement", "deletions or replacements"))"
                } ?? ""
            let window = status.windowSeconds.map { " within \(HumanUnits.count(Int($0), "second"))" } ?? ""
            return "mass-delete guard: HOLDING the uploads\(since)\(count)\(window); nothing is uploaded until "
                + "`syncfs-mount release \(mountpoint)` (send them) or `syncfs-mount discard \(mountpoint)` (undo them here)"
        }
        if !status.enabled { return "mass-delete guard: off (--no-guard)" }
        if status.waiting > 0 {
            return
                "mass-delete guard: \(HumanUnits.count(status.waiting, "deletion or replacement", "deletions or replacements")) "
                + "waiting for the stream of them to pause (\(status.counted) counted within the window)"
        }
        return nil
    }
}
