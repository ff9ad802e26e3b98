import Foundation
import Glibc
import TestSupport
import Testing

/// Changes made on one mount of a `SyncedMounts`, each checked on the other as soon as it arrives,
/// all under the directory `dir` of both.
struct Propagation {
    let mounts: SyncedMounts
    let source: TestFolder
    let destination: TestFolder
    let dir: String

    init(_ mounts: SyncedMounts, from source: TestFolder, to destination: TestFolder, in dir: String) {
        self.mounts = mounts
        self.source = source
        self.destination = destination
        self.dir = dir
    }

    func src(_ path: String) -> String { source.path(dir + "/" + path) }
    func dst(_ path: String) -> String { destination.path(dir + "/" + path) }

    /// Makes `change` on the source, then waits until `arrived` holds on the destination; records
    /// an issue (with how the two trees differ and both logs) and throws, ending the test, if it
    /// does not within 15 s.
    func step(
        _ what: String, change: () throws -> Void, arrived: () throws -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try change()
        if waitUntil(arrived) { return }
        var lastCheck = "false"
        do { lastCheck = String(try arrived()) } catch { lastCheck = "\(error)" }
        let differences = SyncedTree.snapshot(source.path(dir)).differences(
            from: SyncedTree.snapshot(destination.path(dir)), labels: ("source", "destination"))
        let logs = mounts.logs()
        Issue.record(
            """
            \(dir): \(what): not seen on the other mount within 15 s (last check: \(lastCheck))
            source vs destination under \(dir)/: \(differences.prefix(20).joined(separator: "; "))
            \(logs)
            """,
            sourceLocation: sourceLocation)
        throw TestFolderError(message: "\(dir): stopped after \(what)")
    }
}

/// Sets the mtime (and leaves the atime) of `path`, not following a symlink.
func setMtime(_ path: String, seconds: Int, nanoseconds: Int) throws {
    var times = [timespec(tv_sec: 0, tv_nsec: Linux.utimeOmit), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
    try posix("utimensat(\(path))") { utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) }
}

/// Sets the mtime (and leaves the atime) of an open file.
func setMtime(fd: Int32, seconds: Int, nanoseconds: Int) throws {
    var times = [timespec(tv_sec: 0, tv_nsec: Linux.utimeOmit), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
    try posix("futimens") { futimens(fd, &times) }
}

/// (seconds, nanoseconds) of the mtime of `path` (lstat).
func mtimeOf(_ path: String) throws -> (Int, Int) {
    let time = try lstatPath(path).st_mtim
    return (Int(time.tv_sec), Int(time.tv_nsec))
}
