import ArgumentParser
import Foundation
import SyncFS

/// `syncfs-mount recover STATE_DIR --into DIR` (doc/CLI.md, "recover").
struct RecoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Get back the content of a state directory whose database was lost, so it can be mounted again.",
        discussion: """
            For a state directory the mount refuses because its state.db is missing or empty while \
            its cache holds content, or damaged (exit 65); a damaged state.db is set aside. Moves every cached file, named by its file ID (the \
            names were in the lost database), into a new folder "SyncFS recovered YYYY-MM-DD HHMMSS" \
            in DIR, with a RECOVERED.txt listing them. The cache is then empty and the next mount \
            starts over from the container. The recovered files include the changes that were not \
            uploaded and copies of synced files: compare them with the folder, copy back what is \
            missing (it then syncs), then delete them. Exit codes: 65 not a state directory or its \
            database is intact, 73 DIR unusable (another user could write it or a folder above it), 75 the state directory is in use.
            """
    )

    @Argument(help: "The state directory (the mount's --state-dir).")
    var stateDirectory: String

    @Option(
        help:
            "An existing directory to put the recovered folder in, which no other user can write (or a sticky one, as /tmp); it may be inside another SyncFS folder."
    )
    var into: String

    func run() throws {
        let outcome: LostStateRecovery.Outcome
        do {
            outcome = try LostStateRecovery.recover(
                stateDirectory: absolutePath(stateDirectory), into: absolutePath(into))
        } catch {
            throw fail(error)
        }
        if let damaged = outcome.damagedDatabase {
            print("The damaged database was set aside as \(TerminalText.safe(damaged)).")
        }
        guard let folder = outcome.folder else {
            print("Nothing to recover: the cache held no content. The state directory can be mounted again.")
            return
        }
        let bytes = outcome.files.reduce(Int64(0)) { $0 + $1.bytes }
        print(
            "Recovered \(HumanUnits.count(outcome.files.count, "file")) (\(HumanUnits.bytes(bytes))) into \(TerminalText.safe(folder))"
        )
        let empty =
            outcome.emptyRemoved > 0 ? " \(HumanUnits.count(outcome.emptyRemoved, "empty cache file")) removed." : ""
        print(
            "Named by file ID (see RECOVERED.txt there).\(empty) The state directory can be mounted again; it starts over."
        )
    }
}
