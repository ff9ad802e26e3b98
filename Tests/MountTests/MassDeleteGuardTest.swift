import Foundation
import Glibc
import TestSupport
import Testing

/// The mass-delete guard (doc/SEMANTICS.md, "Mass-delete guard"): two mounts of one container; A
/// deletes more than its threshold (`--guard-deletes 20`) at once; B keeps the files (all but the
/// first few, which go at once) until A's `release`, or for good after A's `discard`, which
/// brings them all back on A and B.
@Suite(.serialized)
struct MassDeleteGuardTest {
    /// A's mount options: trips on 20 deletions or replacements within the window; every file
    /// counts as established at once (`--guard-age 0`), so a tree made by the test is guarded.
    static let guarded = ["--guard-deletes", "20", "--guard-age", "0"]
    /// Guarded changes that go at once at a person's pace: at most these of a burst reach B
    /// before the guard trips (`DeleteWindow.Thresholds.standard.prompt`).
    static let prompt = 20
    /// For tests about something else that delete much at once: the guard counts and makes
    /// deletions wait for their stream to pause, but never trips.
    static let neverTrips = ["--guard-deletes", "100000000", "--guard-minimum", "100000000"]

    /// The guard's part of `status --json`.
    struct GuardedStatus: Decodable {
        struct Guard: Decodable {
            var enabled: Bool
            var held: Bool
            var heldChanges: Int?
        }

        var pendingEntries: Int
        var upToDate: Bool?
        var massDeleteGuard: Guard?
    }

    private func guardStatus(_ folder: TestFolder) throws -> GuardedStatus { try folder.statusJSON(of: folder.root) }

    private func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// `big/f00.txt`…: `count` files with distinct content, and a file outside, synced to B.
    private func makeTree(_ mounts: SyncedMounts, files count: Int) throws -> [String: String] {
        try makeDirectory(mounts.a.path("big"))
        var contents: [String: String] = [:]
        for index in 0..<count {
            let name = String(format: "big/f%02d.txt", index)
            let text = "file \(index) " + String(repeating: "x", count: index * 37)
            try writeFile(mounts.a.path(name), text)
            contents[name] = text
        }
        try writeFile(mounts.a.path("outside.txt"), "stays")
        #expect(mounts.a.expectSync())
        let synced = waitUntil(timeout: 30) {
            try contents.allSatisfy { try readText(mounts.b.path($0.key)) == $0.value }
        }
        #expect(synced, "B has the tree before the deletion\n\(mounts.logs())")
        return contents
    }

    private func rmRF(_ path: String) {
        let result = ModelProcess.run(["/bin/rm", "-rf", path], timeout: 60)
        #expect(result.ok, "\(result)")
    }

    /// Proves an upload of A landed on B (so A's uploader was running, and a change made before
    /// the deletion went through).
    private func expectUnrelatedChangeLands(_ mounts: SyncedMounts, _ name: String) throws {
        try writeFile(mounts.a.path(name), "earlier change")
        #expect(
            waitUntil(timeout: 30) { try readText(mounts.b.path(name)) == "earlier change" },
            "an unrelated change of A reaches B\n\(mounts.logs())")
    }

    /// Polls for `seconds` that B still has every file but the first few of the burst, which go
    /// at once (`allowing`; A's deletes would have landed long before).
    private func expectBKeepsEverything(
        _ mounts: SyncedMounts, _ contents: [String: String], seconds: Double, _ context: String,
        allowing: Int = Self.prompt,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var missing = 0
        let lost = waitUntil(timeout: seconds) {
            missing = contents.keys.filter { !exists(mounts.b.path($0)) }.count
            return missing > allowing
        }
        #expect(
            !lost, "\(context): B lost \(missing) files the guard holds\n\(mounts.logs())",
            sourceLocation: sourceLocation)
    }

    /// Waits until B has every file of `contents` with its content.
    private func expectBHasEverything(
        _ mounts: SyncedMounts, _ contents: [String: String], _ context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            waitUntil(timeout: 60) { try contents.allSatisfy { try readText(mounts.b.path($0.key)) == $0.value } },
            "\(context): B has every file\n\(mounts.logs())", sourceLocation: sourceLocation)
    }

    private func expectHeld(_ folder: TestFolder, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(
            waitUntil(timeout: 20) { try guardStatus(folder).massDeleteGuard?.held == true },
            "status says held\n\(folder.daemonLog())", sourceLocation: sourceLocation)
        let status = try guardStatus(folder)
        #expect(status.upToDate == false, sourceLocation: sourceLocation)
        #expect((status.massDeleteGuard?.heldChanges ?? 0) >= 20, sourceLocation: sourceLocation)
        let human = ModelProcess.run([try TestFolder.binaryPath(), "status", folder.root], timeout: 60)
        #expect(
            human.stdout.contains("uploads held by the mass-delete guard"), "\(human)", sourceLocation: sourceLocation)
        #expect(human.stdout.contains("syncfs-mount release"), "\(human)", sourceLocation: sourceLocation)
    }

    @Test func aMassDeletionIsHeldUntilReleased() throws {
        try SyncedMounts.with(argumentsA: Self.guarded) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let contents = try makeTree(mounts, files: 25)
            let events = try Watcher.events([a.root, "--timeout", "180"])
            defer { _ = events.stop() }
            #expect(events.waitForErrors(containing: "watching"))
            try expectUnrelatedChangeLands(mounts, "early.txt")

            rmRF(a.path("big"))
            let removed = Date()
            #expect(!exists(a.path("big")))
            try expectHeld(a)
            // The guard's detection time (doc/performance-log.md): from the end of `rm -rf` to a
            // `status` that says held (includes one `status` process, ~0.1 s).
            print(
                "mass-delete guard: held \(String(format: "%.2f", Date().timeIntervalSince(removed))) s after "
                    + "the rm -rf of 26 entries ended")
            expectBKeepsEverything(mounts, contents, seconds: 8, "held")
            #expect(
                waitUntil(timeout: 20) { events.lines.contains { $0.contains("\"guard-held\"") } },
                "events says held: \(events.output)")

            // `sync` does not wait for what only `release` ends: 75 at once, saying why.
            let started = Date()
            let sync = try a.runSync(timeout: 60)
            #expect(sync.status == 75, "\(sync)")
            #expect(sync.stderr.contains("mass-delete guard"), "\(sync)")
            #expect(Date().timeIntervalSince(started) < 30, "sync returned at once")

            // A change made while held waits too (the whole queue is held).
            try writeFile(a.path("during.txt"), "while held")
            usleep(2_000_000)  // scenario: time for an upload that must not happen
            #expect(!exists(b.path("during.txt")), "nothing of A goes while held")

            let release = ModelProcess.run([try TestFolder.binaryPath(), "release", a.root], timeout: 60)
            #expect(release.ok, "\(release)")
            #expect(
                waitUntil(timeout: 30) { !exists(b.path("big")) && exists(b.path("during.txt")) },
                "after release B loses the folder and gets the later change\n\(mounts.logs())")
            #expect(exists(b.path("outside.txt")) && exists(b.path("early.txt")))
            #expect(try guardStatus(a).massDeleteGuard?.held == false)
            #expect(
                waitUntil(timeout: 20) { events.lines.contains { $0.contains("\"guard-released\"") } },
                "events says released: \(events.output)")
            #expect(a.expectSync())
            let again = ModelProcess.run([try TestFolder.binaryPath(), "release", a.root], timeout: 60)
            #expect(again.ok && again.stdout.contains("nothing is held"), "\(again)")
        }
    }

    @Test func aHeldDeletionSurvivesARestartAndDiscardBringsTheFilesBack() throws {
        try SyncedMounts.with(argumentsA: Self.guarded) { mounts in
            let a = mounts.a
            let contents = try makeTree(mounts, files: 30)
            try expectUnrelatedChangeLands(mounts, "early.txt")
            rmRF(a.path("big"))
            try expectHeld(a)

            try a.unmount()
            try a.remount()
            try expectHeld(a)
            expectBKeepsEverything(mounts, contents, seconds: 6, "held across A's restart")

            let events = try Watcher.events([a.root, "--timeout", "180"])
            defer { _ = events.stop() }
            #expect(events.waitForErrors(containing: "watching"))
            let discard = ModelProcess.run([try TestFolder.binaryPath(), "discard", a.root], timeout: 120)
            #expect(discard.ok, "\(discard)\n\(a.daemonLog())")
            var restored: [String: String] = [:]
            let back = waitUntil(timeout: 30) {
                restored = [:]
                for name in contents.keys { restored[name] = try readText(a.path(name)) }
                return restored == contents
            }
            #expect(back, "A has every file back, byte for byte\n\(a.daemonLog())")
            #expect(try guardStatus(a).massDeleteGuard?.held == false)
            #expect(
                waitUntil(timeout: 20) { events.lines.contains { $0.contains("\"guard-discarded\"") } },
                "events says discarded: \(events.output)")
            // Nothing of the deletion stays uploaded: B has everything (the first few, which went
            // at once, restored from the trash), and A's queue drains.
            #expect(a.expectSync())
            expectBHasEverything(mounts, contents, "after discard")
            expectBKeepsEverything(mounts, contents, seconds: 3, "after discard", allowing: 0)
            let converged = expectConverged(mounts, "after discard")
            #expect(converged?.entries["big/f00.txt"] != nil)
        }
    }

    @Test func deletionsBelowTheThresholdAndInASmallTreeGoThrough() throws {
        try SyncedMounts.with(argumentsA: Self.guarded) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            _ = try makeTree(mounts, files: 15)
            rmRF(a.path("big"))
            #expect(
                waitUntil(timeout: 30) { !exists(b.path("big")) }, "16 deletions are not more than 20\n\(mounts.logs())"
            )
            #expect(try guardStatus(a).massDeleteGuard?.held == false)
            #expect(a.expectSync())
        }
        // The default thresholds: 2 of 3 files is more than 30 % of the tree, but fewer than 50.
        try SyncedMounts.with { mounts in
            let (a, b) = (mounts.a, mounts.b)
            for name in ["one", "two", "three"] { try writeFile(a.path(name), name) }
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { exists(b.path("three")) })
            try posix("unlink") { unlink(a.path("one")) }
            try posix("unlink") { unlink(a.path("two")) }
            #expect(
                waitUntil(timeout: 30) { !exists(b.path("one")) && !exists(b.path("two")) },
                "a small tree does not trip\n\(mounts.logs())")
            #expect(try guardStatus(a).massDeleteGuard?.held == false)
            #expect(try guardStatus(a).massDeleteGuard?.enabled == true)
        }
    }

    @Test func rewritingManyFilesInPlaceIsHeldToo() throws {
        try SyncedMounts.with(argumentsA: Self.guarded) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let contents = try makeTree(mounts, files: 25)
            for name in contents.keys { try writeFile(a.path(name), (0..<2048).map { _ in UInt8.random(in: 0...255) }) }
            try expectHeld(a)
            var changed = 0
            let leaked = waitUntil(timeout: 6) {
                changed = contents.filter { (try? readText(b.path($0.key))) != $0.value }.count
                return changed > Self.prompt
            }
            #expect(!leaked, "B keeps the old contents while held (all but the first few): \(changed) changed")
            // An edit made while held is the user's, not the burst's: discard keeps it.
            try writeFile(a.path("outside.txt"), "edited while held")
            let discard = ModelProcess.run([try TestFolder.binaryPath(), "discard", a.root], timeout: 120)
            #expect(discard.ok, "\(discard)\n\(a.daemonLog())")
            #expect(
                waitUntil(timeout: 30) { try contents.allSatisfy { try readText(a.path($0.key)) == $0.value } },
                "discard brings the container's contents back on A\n\(a.daemonLog())")
            #expect(try readText(a.path("outside.txt")) == "edited while held")
            #expect(a.expectSync())
            // Nothing of the burst is left as a change here: discard looked at the rewrites made
            // before the trip without uploading them, and no file stays marked as being sent.
            let settled = waitUntil(timeout: 30) {
                contents.keys.allSatisfy { ["local", "online"].contains(describeState(a.path($0))) }
            }
            #expect(
                settled,
                "A's files after discard: \(contents.keys.sorted().map { "\($0)=\(describeState(a.path($0)))" })")
            expectBHasEverything(mounts, contents, "after discard")
            #expect(waitUntil(timeout: 30) { try readText(b.path("outside.txt")) == "edited while held" })
        }
    }
}
