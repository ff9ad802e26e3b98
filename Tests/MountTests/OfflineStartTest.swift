import Foundation
import Glibc
import TestSupport
import Testing

/// Offline start (doc/SEMANTICS.md, "Offline"): a state directory that was mounted before mounts
/// again while its container is away, from its stored metadata, never creating an empty
/// container in its place; local content stays readable, writes are queued, `sync` reports the
/// outage (exit 75), and the queue drains by itself once the container is back.
@Suite(.serialized)
struct OfflineStartTest {
    @Test func aMountStartsWithoutItsContainerAndCatchesUpWhenItIsBack() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { folder.tearDown() }
        try writeFile(folder.path("online.txt"), "written online")
        #expect(folder.expectSync())
        try folder.unmount()

        // The container goes away (an unplugged disk); the state directory stays.
        let away = folder.baseDir + "/container-away"
        try posix("rename") { rename(folder.containerPath, away) }
        let started = Date()
        try folder.remount()
        let startup = Date().timeIntervalSince(started)
        #expect(startup < 10, "the offline mount took \(startup) s to start")
        #expect(!pathExists(folder.containerPath), "no container was created in place of the missing one")
        #expect(folder.daemonLog().contains("unreachable; starting offline"), "\(folder.daemonLog())")

        #expect(try readText(folder.path("online.txt")) == "written online")
        try makeDirectory(folder.path("offline-dir"))
        try writeFile(folder.path("offline-dir/new.txt"), "written offline")
        #expect(try readText(folder.path("offline-dir/new.txt")) == "written offline")

        let stalled = try folder.runSync(timeout: 3)
        #expect(stalled.status == 75, "\(stalled)")
        #expect(stalled.stderr.contains("unreachable"), "\(stalled)")
        #expect(!pathExists(folder.containerPath))

        // The container comes back: the queue drains by itself (no `sync`), within seconds.
        try posix("rename") { rename(away, folder.containerPath) }
        let drained = waitUntil(timeout: 15) { try folder.syncStatus().pendingEntries == 0 }
        #expect(drained, "the queue did not drain within 15 s of the container's return\n\(folder.daemonLog())")
        #expect(folder.expectSync(timeout: 15))
        #expect(folder.daemonLog().contains("is reachable again"), "\(folder.daemonLog())")

        // A fresh mount of the container (a second machine) sees what was written offline.
        let second = try TestFolder.make(
            .mount, sharedContainer: folder.containerPath, mountArguments: ["--upload-delay", "20"])
        defer { second.tearDown() }
        #expect(
            waitUntil(timeout: 15) { try readText(second.path("offline-dir/new.txt")) == "written offline" },
            "\(second.daemonLog())")
        #expect(try readText(second.path("online.txt")) == "written online")
    }

    /// A later mount never uses another container found at the recorded path: it is refused as on
    /// the first mount (the state directory belongs to its own container), and left untouched.
    @Test func anotherContainerAtTheRecordedPathIsRefused() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { folder.tearDown() }
        try writeFile(folder.path("mine.txt"), "mine")
        #expect(folder.expectSync())
        try folder.unmount()
        try posix("rename") { rename(folder.containerPath, folder.baseDir + "/container-away") }
        // Another container at the same path (made by another state directory's first mount).
        let other = try TestFolder.make(
            .mount, sharedContainer: folder.containerPath, mountArguments: ["--upload-delay", "20"])
        defer { other.tearDown() }
        try writeFile(other.path("theirs.txt"), "theirs")
        #expect(other.expectSync())

        #expect(throws: TestFolderError.self) { try folder.remount() }
        #expect(folder.daemonLog().contains("belongs to another container"), "\(folder.daemonLog())")
        #expect(try readText(other.path("theirs.txt")) == "theirs")
    }
}
