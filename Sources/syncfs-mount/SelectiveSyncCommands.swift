import ArgumentParser
import Foundation
import SyncFS

/// `exclude MOUNT PATH`: selective sync, a folder kept off this device (doc/SEMANTICS.md,
/// "Selective sync").
struct ExcludeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exclude",
        abstract: "Keep a folder off this device: no placeholders, no downloads, its changes not shown here.",
        discussion: """
            PATH is the folder, relative to MOUNT (or an absolute path inside it). Its local content \
            is freed; the container keeps it and the other devices still sync it; `status` lists \
            it; `include` brings it back. Exit codes: 0 excluded; 65 not a folder of the mount, \
            the root, or MOUNT has no running daemon; 75 changes below are not uploaded yet, or \
            something below is open (try again after `syncfs-mount sync` or closing it).
            """
    )

    @Argument(help: "The mount point of a SyncFS folder.")
    var mountpoint: String

    @Argument(help: "The folder to exclude, relative to the mount point.")
    var path: String

    func run() throws {
        do {
            let (mount, relative) = try SelectiveSyncTarget.resolve(mountpoint, path)
            let report = try SelectiveSyncTarget.ask(.exclude, relative, mount: mount).action
            let (files, bytes) = (report?.files ?? 0, report?.bytes ?? 0)
            print(
                TerminalText.safe(
                    "excluded \(relative) from \(mount.mountpoint): "
                        + "\(HumanUnits.count(files, "file")), \(HumanUnits.bytes(bytes)) freed"))
        } catch {
            throw fail(error)
        }
    }
}

/// `include MOUNT PATH`: an excluded folder brought back, as placeholders.
struct IncludeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "include",
        abstract: "Bring an excluded folder back to this device (its files appear at once, as placeholders).",
        discussion: """
            PATH is the folder as `status` lists it under "excluded". A local entry made at its name \
            meanwhile is kept as a conflict copy (a selective sync conflict). Exit codes: 0 \
            included; 65 PATH is not excluded, or MOUNT has no running daemon.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder.")
    var mountpoint: String

    @Argument(help: "The excluded folder, relative to the mount point.")
    var path: String

    func run() throws {
        do {
            let (mount, relative) = try SelectiveSyncTarget.resolve(mountpoint, path)
            _ = try SelectiveSyncTarget.ask(.include, relative, mount: mount)
            print(TerminalText.safe("included \(relative) in \(mount.mountpoint)"))
        } catch {
            throw fail(error)
        }
    }
}

/// The mount and the path below it of `exclude` and `include`.
enum SelectiveSyncTarget {
    static func resolve(_ mountpoint: String, _ path: String) throws(MountError) -> (MountedPath, String) {
        let mount = try MountedPath.resolve(mountpoint)
        var relative = path
        if path.hasPrefix("/") {
            let prefix = mount.mountpoint + "/"
            guard path.hasPrefix(prefix) else {
                throw MountError(.badInput, "\(path) is not inside \(mount.mountpoint)")
            }
            relative = String(path.dropFirst(prefix.count))
        } else if !mount.relative.isEmpty {
            relative = mount.relative + "/" + path
        }
        return (mount, relative)
    }

    /// Asks the daemon; a refusal that may pass later (changes not uploaded, open files) exits 75.
    static func ask(
        _ command: ControlRequest.Command, _ relative: String, mount: MountedPath
    ) throws(MountError) -> ControlReply {
        switch ControlClient.ask(ControlRequest(command, path: relative), mountpoint: mount.mountpoint) {
        case .success(let reply):
            if let error = reply.error {
                let message = TerminalText.safe("cannot \(command.rawValue) \(relative): \(error)")
                throw MountError(reply.retryable == true ? .busy : .badInput, message)
            }
            return reply
        case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
        case .failure(let failure): throw MountError(.badInput, "\(failure)")
        }
    }
}
