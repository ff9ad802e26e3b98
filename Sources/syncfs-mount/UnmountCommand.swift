import ArgumentParser
import Foundation
import SyncFS

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a SyncFS folder and wait until its daemon has committed its state.",
        discussion: "Fails with exit code 75 while files are open in the folder."
    )

    @Argument(help: "The mount point to unmount.")
    var mountpoint: String

    func run() throws {
        let path = absolutePath(mountpoint)
        do {
            try MountDaemon.unmount(path)
        } catch {
            throw fail(error)
        }
    }
}

/// `path` made absolute against the current directory, with `.`/`..` and trailing `/` removed.
func absolutePath(_ path: String) -> String {
    let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
    return url.standardizedFileURL.path
}
