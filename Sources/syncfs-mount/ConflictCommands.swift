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

/// `resolve PATH… [--keep local|remote|both]` and `resolve PATH --with FILE`: end conflicts,
/// keeping both files (the default, `--keep both`), one side (`ConflictChoice`), or the user's
/// merge.
struct ResolveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve conflicts: keep both files, one side, or your own merge (on every machine).",
        discussion: """
            PATH is a conflict copy, a file merged with conflict markers, or an original (then all \
            its copies). Without an option (or with --keep both) the marks are removed and every file \
            stays. --keep local or --keep remote keeps one version in the original and deletes the \
            copy: local is the version this machine had (in the copy if the copy was made here, else \
            in the original), remote the other. --with FILE writes FILE into the original (for a file \
            merged with conflict markers: into the file) and deletes the copy. Exit 1 if PATH has no \
            unresolved conflict (or more than one copy for --keep local|remote and --with), 65 if it \
            is not in a SyncFS mount or FILE cannot be read, 64 for --keep with --with.
            """
    )

    @Argument(help: "Files inside a SyncFS mount.")
    var paths: [String]

    @Option(help: "local, remote or both (the default): which version stays.")
    var keep: ConflictChoice.Keep?

    @Option(name: .customLong("with"), help: "A file holding your merge, written into the original.")
    var mergedFile: String?

    func validate() throws {
        if keep != nil && mergedFile != nil { throw ValidationError("--keep and --with exclude each other") }
        if mergedFile != nil && paths.count != 1 { throw ValidationError("--with FILE resolves one PATH") }
    }

    func run() throws {
        var withoutConflict = false
        do {
            for path in paths {
                let target = try MountedPath.resolve(path)
                let choice: ConflictChoice
                switch (keep, mergedFile) {
                case (.local?, _): choice = .keep(.local)
                case (.remote?, _): choice = .keep(.remote)
                case (_, let file?): choice = .with(file)
                default: choice = .keepBoth
                }
                if !(try ConflictResolution(target: target).resolve(choice)) {
                    printError("syncfs-mount resolve: \(target.display): no unresolved conflict")
                    withoutConflict = true
                }
            }
        } catch let error as ConflictResolution.Refusal {
            printError("syncfs-mount resolve: \(error.message)")
            throw ExitCode(.failure)
        } catch let error as MountError {
            throw fail(error)
        }
        if withoutConflict { throw ExitCode(.failure) }
    }
}
