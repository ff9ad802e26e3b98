import ArgumentParser
import SyncFS

/// `syncfs-mount init PATH`: the one way, besides `mount --create`, to make a local container.
struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make a new, empty local container at PATH.",
        discussion: """
            PATH must not exist yet or be an empty directory, and its parent must exist. The \
            container is private to you (mode 0700). Mount it with `syncfs-mount mount PATH \
            MOUNTPOINT`; `mount` never makes a container unless given --create. Exit code 65 if \
            PATH is not empty, is already a container, or its parent is missing.
            """
    )

    @Argument(help: "Where the new container goes: a new or empty directory.")
    var path: String

    @Flag(
        help:
            "Make it end-to-end encrypted, with this device as its first member; its recovery key is shown once.")
    var encrypted = false

    @Option(
        help: ArgumentHelp(
            "With --encrypted: the file holding this device's private keys (made 0600 if missing).",
            discussion: "Default: $XDG_STATE_HOME/syncfs/device-key (or ~/.local/state/…; /var/lib/syncfs/… for root).",
            valueName: "file"))
    var deviceKey: String?

    func run() throws {
        let location = absolutePath(path)
        do {
            try ContainerCreation.checkOutsideSyncFSFolders(location)
            let id = try ContainerCreation.initialize(location)
            guard encrypted else {
                print("Created an empty SyncFS container at \(location) (ID \(id))")
                return
            }
            let container = try ContainerCreation.open(location)
            let recovery = try SealedMounting.create(container, deviceKeyFile: deviceKey.map(absolutePath))
            print("Created an empty, end-to-end encrypted SyncFS container at \(location) (ID \(id))")
            print(SealedMounting.recoveryNotice(recovery))
        } catch {
            throw fail(error)
        }
    }
}
