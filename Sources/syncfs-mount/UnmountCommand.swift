import ArgumentParser
import Foundation
import SyncFS

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Upload what is queued, unmount a SyncFS folder and wait until its daemon has committed its state.",
        discussion: """
            MOUNTPOINT may also be any path inside the mount (the mount holding it is unmounted). \
            First waits for the upload queue with progress on standard error; if the container \
            stays unreachable for --sync-timeout seconds it says so and unmounts anyway, keeping \
            the queue for the next mount. Fails with exit code 75 while files are open in the folder.
            """
    )

    @Argument(help: "The mount point to unmount, or a path inside the mount.")
    var mountpoint: String

    @Option(help: "Seconds to wait for uploads to make progress before unmounting with changes still queued.")
    var syncTimeout: Double = 30

    func run() throws {
        // A path inside a live mount names that mount; anything else (a mount whose daemon died,
        // "Transport endpoint is not connected") is unmounted as given.
        let path = (try? MountedPath.resolve(mountpoint))?.mountpoint ?? absolutePath(mountpoint)
        var nothingQueued = false
        switch SyncWaiter.drain(mountpoint: path, timeout: syncTimeout, progress: true) {
        case .stalled(let status) where status.paused != nil && status.pendingEntries == 0:
            nothingQueued = true
        case .stalled(let status):
            printError("syncfs-mount: \(SyncWaiter.stallMessage(status)) for the next mount")
        case .refused(let reason):
            printError(
                "syncfs-mount: cannot ask the daemon about its queue (\(reason)); the queue stays for the next mount")
        case .done(let queuedAtStart):
            nothingQueued = queuedAtStart == 0
        case .notMounted:
            break
        }
        do {
            try MountDaemon.unmount(path)
        } catch {
            throw fail(error)
        }
        if nothingQueued { print("Unmounted \(TerminalText.safe(path)); nothing was waiting to upload.") }
    }
}

/// `path` made absolute against the current directory, with `.`/`..` and trailing `/` removed.
func absolutePath(_ path: String) -> String {
    let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
    return url.standardizedFileURL.path
}
