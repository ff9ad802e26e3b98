import Foundation
import SyncBackend
import SyncClient
import SyncFS

/// Before a mount: says on standard error when another state directory of the same container
/// holds changes that no daemon is uploading (they stay there until that directory is mounted
/// again; this mount goes ahead without them). See doc/CLI.md, "Changes waiting elsewhere".
/// The same container: the same absolute path or normalised URL, or, for a local container,
/// the same container ID (another path to it: a symlink, another mount of its disk).
func noticeChangesWaitingElsewhere(container: String, stateDirectory: String) {
    let mine = URL(fileURLWithPath: stateDirectory).standardizedFileURL.path
    let id = ServerAddress.looksLikeURL(container) ? nil : LocalContainer.markerID(at: container)
    for waiting in StateDirectoryScan.scan().waiting
    where (waiting.container == container || (id != nil && waiting.containerID == id))
        && URL(fileURLWithPath: waiting.stateDirectory).standardizedFileURL.path != mine
    {
        let at = waiting.mountpoint.map { ", last mounted at \(printable($0))" } ?? ""
        printError(
            "syncfs-mount: note: \(changes(waiting.queued)) to \(printable(container)) not uploaded yet wait in "
                + "another state directory, \(printable(waiting.stateDirectory))\(at). This mount does not "
                + "include them; to upload them, mount that state directory again: \(printable(waiting.resume))")
    }
}

/// "1 change", "2 changes".
func changes(_ count: Int) -> String { count == 1 ? "1 change" : "\(count) changes" }

/// `text` for a terminal: control characters shown as `?` (a recorded path cannot move the cursor).
func printable(_ text: String) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
}
