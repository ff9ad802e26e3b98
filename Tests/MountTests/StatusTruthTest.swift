import Foundation
import Glibc
import TestSupport
import Testing

/// `status` answers "is it safe to close the laptop?" truthfully (doc/CLI.md, `status`;
/// doc/SEMANTICS.md, "Failures, outages and restarts"): "up to date" only when online, caught up
/// and the queue is empty; an unreachable container is one condition ("offline since …"), not a
/// failing change per file; a failure caused by the outage clears when it ends. And `sync`,
/// `events` and `unmount` take any path inside a mount, as `status` does.
@Suite(.serialized)
struct StatusTruthTest {
    /// The extended `status --json` (the fields this suite checks; older ones in `MountSyncStatus`).
    struct Truth: Decodable {
        var online: Bool
        var upToDate: Bool?
        var changesWaiting: Int?
        var offlineSince: String?
        var pendingEntries: Int
        var failing: [MountSyncStatus.Failing]
        var files: [String: Int]?
    }

    static func statusText(_ path: String) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath(), "status", path], timeout: 60)
    }

    static func truth(_ folder: TestFolder) throws -> Truth { try folder.statusJSON(of: folder.root) }

    /// The status for a message (or why it could not be read).
    static func describe(_ folder: TestFolder) -> String {
        do { return "\(try truth(folder))" } catch { return "(status failed: \(error))" }
    }

    static func offlineFolder() throws -> (TestFolder, outage: String) {
        let outage = try makeTemporaryDirectory("syncfs-outage") + "/outage"
        let folder = try TestFolder.make(
            .mount, mountArguments: ["--upload-delay", "20"], mountEnvironment: OutageSwitch.environment(outage))
        return (folder, outage)
    }

    @Test func offlineWithAQueueSaysOfflineAndChangesWaitingNotFailing() throws {
        let (folder, outage) = try Self.offlineFolder()
        defer {
            folder.tearDown()
            try? FileManager.default.removeItem(atPath: (outage as NSString).deletingLastPathComponent)
        }
        try writeFile(folder.path("before.txt"), "online")
        try #require(folder.expectSync())
        #expect(waitUntil(timeout: 20) { try Self.truth(folder).upToDate == true }, "\(Self.describe(folder))")

        try writeFile(outage, "")
        try writeFile(folder.path("offline.txt"), "written while the container is away")
        let offline = waitUntil(timeout: 20) {
            let truth = try Self.truth(folder)
            return !truth.online && truth.pendingEntries == 1
        }
        #expect(offline, "status never said offline with one change: \(Self.describe(folder))")
        // Let the uploader try (and fail) a few times.
        Thread.sleep(forTimeInterval: 2.5)  // scenario: the uploader fails a few times
        let truth = try Self.truth(folder)
        #expect(truth.online == false)
        #expect(truth.upToDate == false)
        #expect(truth.changesWaiting == 1)
        #expect(truth.offlineSince != nil, "offlineSince is set while offline")
        #expect(truth.failing.isEmpty, "a change waiting for the container is not failing: \(truth.failing)")
        #expect(
            (truth.files?["error"] ?? 0) == 0, "no file is in error while offline: \(String(describing: truth.files))")
        #expect(describeState(folder.path("offline.txt")) == "modified")
        let text = try Self.statusText(folder.root)
        #expect(text.ok, "\(text)")
        #expect(text.stdout.contains("offline since"), "\(text.stdout)")
        #expect(text.stdout.contains("1 change waiting"), "\(text.stdout)")
        #expect(!text.stdout.contains("up to date"), "\(text.stdout)")
        #expect(!text.stdout.contains("failing"), "\(text.stdout)")
        #expect(!text.stdout.contains("attempts"), "\(text.stdout)")

        unlink(outage)
        let caughtUp = waitUntil(timeout: 30) { try Self.truth(folder).upToDate == true }
        #expect(caughtUp, "not up to date 30 s after the outage ended: \(Self.describe(folder))")
        let after = try Self.statusText(folder.root)
        #expect(after.stdout.contains("online, up to date"), "\(after.stdout)")
        #expect(try Self.truth(folder).offlineSince == nil)
    }

    @Test func queuedChangesWhileOnlineAreNotUpToDate() throws {
        // A long upload delay keeps the change queued while the mount is online.
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "600000"])
        defer { folder.tearDown() }
        #expect(waitUntil(timeout: 20) { try Self.truth(folder).online })
        try writeFile(folder.path("queued.bin"), [UInt8](repeating: 7, count: 3 << 20))
        #expect(waitUntil(timeout: 20) { try Self.truth(folder).pendingEntries == 1 })
        let truth = try Self.truth(folder)
        #expect(truth.online && truth.upToDate == false && truth.changesWaiting == 1, "\(truth)")
        let text = try Self.statusText(folder.root)
        #expect(!text.stdout.contains("up to date"), "\(text.stdout)")
        #expect(text.stdout.contains("1 change waiting (3.0 MiB)"), "\(text.stdout)")
        #expect(folder.expectSync())
        #expect(waitUntil(timeout: 20) { try Self.truth(folder).upToDate == true })
    }

    /// A placeholder read while the container is unreachable fails (ENETDOWN); once the container
    /// answers again, nothing about that read is left as an error.
    @Test func aReadThatFailedOfflineLeavesNoErrorOnceOnline() throws {
        try MountGroup.with(count: 2) { group in
            let (a, b) = (group.mounts[0], group.mounts[1])
            let content = try randomBytes(1 << 20)
            try writeFile(a.path("far.bin"), content)
            try #require(a.expectSync())
            // B has never read it: a placeholder.
            #expect(waitUntil(timeout: 20) { describeState(b.path("far.bin")) == "online" })
            // A fresh daemon and kernel mount: nothing of the file is in any cache.
            try b.unmount()
            group.setOutage(1, true)
            try b.remount()
            #expect(describeState(b.path("far.bin")) == "online")
            switch timedRead(b.path("far.bin"), count: 4096, deadline: 20) {
            case .failed(let code, _): #expect(code == ENETDOWN, "\(code)")
            case .bytes(let read, _):
                Issue.record("read \(read.count) bytes of a placeholder while offline\n\(b.daemonLog(limit: 3000))")
            case .blocked: Issue.record("the read blocked for 20 s")
            }
            let offline = try Self.truth(b)
            #expect(!offline.online)
            #expect(offline.offlineSince != nil)
            #expect(
                (offline.files?["error"] ?? 0) == 0, "offline is not an error: \(String(describing: offline.files))")
            #expect(describeState(b.path("far.bin")) == "online")

            group.setOutage(1, false)
            // Any container answer brings the mount online (the follower's next look, within seconds).
            #expect(waitUntil(timeout: 30) { try Self.truth(b).online }, "\(Self.describe(b))")
            let online = try Self.truth(b)
            #expect(
                (online.files?["error"] ?? 0) == 0, "the failed read left an error: \(String(describing: online.files))"
            )
            #expect(describeState(b.path("far.bin")) == "online")
            let text = try Self.statusText(b.root)
            #expect(!text.stdout.contains("failing"), "\(text.stdout)")
            #expect(try readFile(b.path("far.bin")) == content)
        }
    }

    /// `sync`, `events` and `unmount` take a path inside the mount (and a symlink to one), as
    /// `status` does; a path outside any mount is still refused with 65.
    @Test func syncEventsAndUnmountTakeAPathInsideTheMount() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { folder.tearDown() }
        let binary = try TestFolder.binaryPath()
        try makeDirectory(folder.path("docs"))
        try writeFile(folder.path("docs/a.txt"), "a")
        let link = folder.baseDir + "/link-to-docs"
        try posix("symlink") { symlink(folder.path("docs"), link) }

        for path in [folder.path("docs"), folder.path("docs/a.txt"), link] {
            let sync = ModelProcess.run([binary, "sync", path, "--timeout", "20"], timeout: 80)
            #expect(sync.ok, "\(sync)")
        }
        let outside = ModelProcess.run([binary, "sync", folder.baseDir, "--timeout", "5"], timeout: 60)
        #expect(outside.status == 65, "\(outside)")

        // `events` on a folder inside the mount watches that folder (started and watching, its
        // `watching` line seen, before the change is made).
        // (A folder's watcher also gets `synced`: its first line need not be the change.)
        let watcher = try Watcher.events([folder.path("docs"), "--timeout", "60"])
        try writeFile(folder.path("docs/b.txt"), "b")
        #expect(waitUntil { watcher.output.contains("docs/b.txt") }, "\(watcher.output) \(watcher.errors)")
        #expect(watcher.stop() == 0, "\(watcher.errors)")
        #expect(watcher.errors.contains("watching \(folder.path("docs"))"), "\(watcher.errors)")

    }

    /// `sync` and `download` to a pipe: one line a second at most, only when something changed,
    /// with the percentage of the bytes (inside the one large file) and IEC units.
    @Test func progressLinesComeOncePerSecondAtMostWithBytesInsideALargeFile() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "600000"])
        defer { folder.tearDown() }
        let binary = try TestFolder.binaryPath()
        try writeFile(folder.path("large.bin"), try randomBytes(96 << 20))
        #expect(waitUntil(timeout: 20) { try Self.truth(folder).pendingEntries == 1 })

        func expectProgress(_ result: ModelProcessResult, verb: String, seconds: Double) {
            #expect(result.ok, "\(result)")
            let lines = result.stderr.split(separator: "\n").map(String.init)
            // A quick one (under about 0.2 s) prints nothing at all; otherwise it ends with "done".
            #expect(lines.isEmpty || lines.last == "\(verb): done", "\(result)")
            let progress = lines.dropLast()
            #expect(!result.stderr.contains("\r"), "no redrawing into a pipe")
            #expect(Double(progress.count) <= seconds + 2, "\(progress.count) lines in \(seconds) s: \(lines)")
            for (previous, next) in zip(progress, progress.dropFirst()) {
                #expect(previous != next, "a line repeated: \(previous)")
            }
            for line in progress {
                #expect(line.contains("%") && line.contains("of 96.0 MiB") && line.contains("1 "), "\(line)")
                #expect(!line.contains(" MB") && !line.contains(" KB"), "\(line)")
            }
            if seconds > 2 { #expect(!progress.isEmpty, "no progress line in \(seconds) s") }
            print("\(verb) of 96 MiB: \(seconds) s, \(progress.count) progress lines: \(progress)")
        }

        var started = Date()
        let sync = ModelProcess.run([binary, "sync", folder.root, "--timeout", "120"], timeout: 240)
        expectProgress(sync, verb: "syncing", seconds: Date().timeIntervalSince(started))

        let evicted = ModelProcess.run([binary, "evict", folder.path("large.bin")], timeout: 60)
        #expect(evicted.ok && evicted.stdout == "evicted 1 file, 96.0 MiB freed\n", "\(evicted)")
        started = Date()
        let download = ModelProcess.run([binary, "download", folder.path("large.bin")], timeout: 240)
        expectProgress(download, verb: "downloading", seconds: Date().timeIntervalSince(started))
    }

    /// `unmount` of a path inside a mount unmounts that mount (a daemon started by `mount`, so
    /// that the command can wait for it to exit).
    @Test func unmountTakesAPathInsideTheMount() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let binary = try TestFolder.binaryPath()
        let mountpoint = base + "/mnt"
        try makeDirectory(mountpoint)
        try makeDirectory(base + "/container")
        let mounted = ModelProcess.run(
            [binary, "mount", base + "/container", mountpoint, "--state-dir", base + "/state", "--create"], timeout: 60)
        defer { if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) } }
        try #require(mounted.ok, "\(mounted)")
        try makeDirectory(mountpoint + "/docs")
        try writeFile(mountpoint + "/docs/a.txt", "a")
        let unmount = ModelProcess.run([binary, "unmount", mountpoint + "/docs"], timeout: 90)
        #expect(unmount.ok, "\(unmount)")
        #expect(!TestFolder.isMounted(mountpoint), "\(mountpoint) is still mounted")
        // Uploaded before the unmount: a new mount of the container sees it.
        let again = try TestFolder.make(.mount, sharedContainer: base + "/container")
        defer { again.tearDown() }
        #expect(waitUntil(timeout: 20) { try readText(again.path("docs/a.txt")) == "a" })
    }
}
