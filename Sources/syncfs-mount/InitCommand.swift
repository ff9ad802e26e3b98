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

    func run() throws {
        let location = absolutePath(path)
        do {
            try ContainerCreation.checkOutsideSyncFSFolders(location)
            let id = try ContainerCreation.initialize(location)
            print("Created an empty SyncFS container at \(location) (ID \(id))")
        } catch {
            throw fail(error)
        }
    }
}
