import ArgumentParser
import Foundation
import SyncFS

/// `conflicts [PATH] [--json]`: the unresolved conflicts of a mount.
struct ConflictsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List the unresolved conflicts of a mount: conflict copies and files merged with conflict markers.",
        discussion: """
            One line per conflict: the copy, the file it was split from, the host and time, and why. \
            A conflict is resolved by deleting the copy (or the original), or with `syncfs-mount resolve`. \
            Exit 65 when PATH is not in a SyncFS mount with a running daemon.
            """
    )

    @Argument(help: "A mount point, or a path inside a mount (default: the current directory).")
    var path: String = "."

    @Flag(help: "Print one line of JSON (an array).")
    var json = false

    func run() throws {
        let target: MountedPath
        let reply: ControlReply
        do {
            target = try MountedPath.resolve(path)
            reply = try MountedPath(mountpoint: target.mountpoint, relative: "").ask(.conflicts)
        } catch {
            throw fail(error)
        }
        let conflicts = reply.conflicts ?? []
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return print(String(decoding: (try? encoder.encode(conflicts)) ?? Data(), as: UTF8.self))
        }
        if conflicts.isEmpty { return print("No unresolved conflicts.") }
        for conflict in conflicts {
            // A file merged with conflict markers carries its own note: it is no copy.
            let original =
                conflict.originalPath == conflict.path
                ? "merged with conflict markers"
                : conflict.originalPath.map { "copy of \($0)" } ?? "its original is gone"
            print("\(conflict.path): \(original); kept on \(conflict.host) at \(conflict.time): \(conflict.reason)")
        }
    }
}

/// `resolve PATH…`: forget conflicts, keeping the files.
struct ResolveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Mark conflicts as resolved, keeping every file as it is (on every machine).",
        discussion: """
            PATH is a conflict copy, a file merged with conflict markers, or an original (then all \
            its copies). Exit 1 if PATH has no conflict; 65 if it is not in a SyncFS mount.
            """
    )

    @Argument(help: "Files inside a SyncFS mount.")
    var paths: [String]

    func run() throws {
        var withoutConflict = false
        do {
            for path in paths {
                let target = try MountedPath.resolve(path)
                let reply = try target.ask(.resolve)
                if reply.action?.files ?? 0 == 0 {
                    printError("syncfs-mount resolve: \(target.display): no unresolved conflict")
                    withoutConflict = true
                }
            }
        } catch {
            throw fail(error)
        }
        if withoutConflict { throw ExitCode(.failure) }
    }
}
