import Foundation
import Glibc
import TestSupport
import Testing

/// What programs following a mount need ("apps can follow everything they need"):
/// `events` reports the mount going offline and online, finished downloads and rules-file
/// errors; `status` shows a rules error as soon as the file is saved; `user.syncfs.id` gives a
/// file's stable ID.
@Suite(.serialized)
struct FollowingTest {
    /// The parsed events of `watcher` of the given kinds.
    private func events(_ watcher: Watcher, _ kinds: Set<String>) -> [EventLine] {
        EventLine.parse(watcher.lines).filter { kinds.contains($0.kind) }
    }

    /// A private 0700 directory (for an outage switch).
    private func privateDirectory() throws -> String {
        return try makeTemporaryDirectory("syncfs-follow")
    }

    /// B's container goes away for a few seconds (its follower and uploader retry all along) and
    /// comes back: every watcher, whatever its path filter, sees exactly one `offline` then one
    /// `online`, path "", the offline one with the failure.
    @Test func offlineAndOnlineOncePerTransitionForEveryWatcher() throws {
        let directory = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outage = directory + "/outage"
        try SyncedMounts.with(uploadDelay: 20, environmentB: OutageSwitch.environment(outage)) { mounts in
            let b = mounts.b
            let everything = try Watcher.events([b.root, "--timeout", "120"])
            defer { everything.stop() }
            let filtered = try Watcher.events([b.root, "some/folder/", "--timeout", "120"])
            defer { filtered.stop() }
            try writeFile(outage, "")
            // An upload fails too (and is retried): still one `offline`.
            try writeFile(b.path("queued.txt"), "made offline")
            #expect(
                waitUntil(timeout: 30) { !events(everything, ["offline"]).isEmpty }, "\(everything.output)")
            // The follower retries every second meanwhile.
            usleep(4_000_000)  // scenario: several of the follower's retries
            #expect(try b.syncStatus().online == false)
            unlink(outage)
            #expect(waitUntil(timeout: 30) { !events(everything, ["online"]).isEmpty }, "\(everything.output)")
            #expect(b.expectSync(timeout: 60))
            usleep(1_000_000)  // scenario: time for an event that must not come
            for watcher in [everything, filtered] {
                let seen = events(watcher, ["online", "offline"])
                #expect(seen.map(\.kind) == ["offline", "online"], "once per transition: \(watcher.output)")
                #expect(seen.allSatisfy { $0.path == "" && $0.fileID == nil }, "\(watcher.output)")
                #expect(seen.first?.message?.isEmpty == false, "offline says why: \(watcher.output)")
            }
            #expect(
                EventLine.parse(filtered.lines).allSatisfy {
                    ["online", "offline", "scan-begin", "scan-end", "synced"].contains($0.kind)
                }, "the filter still applies to changes (the mount's own events reach every folder): \(filtered.output)"
            )
        }
    }

    /// A file that arrived as a placeholder: reading it (a hydration) and `download` both end
    /// with one `downloaded` event for the file, with its ID; an entry filter applies.
    @Test func aFinishedDownloadIsAnEvent() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("read.bin"), patternBytes(count: 300_000, seed: 3))
            try writeFile(a.path("fetched.bin"), patternBytes(count: 200_000, seed: 4))
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path("read.bin")) && pathExists(b.path("fetched.bin")) })
            #expect(describeState(b.path("read.bin")) == "online", "arrived as a placeholder")
            let everything = try Watcher.events([b.root, "--timeout", "120"])
            defer { everything.stop() }
            let one = try Watcher.events([b.root, "fetched.bin", "--timeout", "120"])
            defer { one.stop() }

            #expect(try readFile(b.path("read.bin")) == patternBytes(count: 300_000, seed: 3))
            try b.expectCommand(["download", b.path("fetched.bin")])
            #expect(
                waitUntil { events(everything, ["downloaded"]).count >= 2 }, "\(everything.output)\n\(mounts.logs())")
            let downloaded = events(everything, ["downloaded"])
            #expect(downloaded.compactMap(\.path).sorted() == ["fetched.bin", "read.bin"], "\(everything.output)")
            #expect(downloaded.allSatisfy { $0.type == "file" && $0.origin == nil })
            let readID = downloaded.first { $0.path == "read.bin" }?.fileID
            #expect(readID == (try? syncfsXattr(b.path("read.bin"), "id")), "the file's ID")
            #expect(
                waitUntil { !events(one, ["downloaded"]).isEmpty }
                    && events(one, ["downloaded"]).compactMap(\.path) == ["fetched.bin"], "\(one.output)")
            // Reading it again downloads nothing: no second event.
            _ = try readFile(b.path("read.bin"))
            usleep(500_000)  // scenario: time for an event that must not come
            #expect(events(everything, ["downloaded"]).count == 2, "\(everything.output)")
        }
    }

    /// The rules errors of `status --json`.
    private struct RulesStatus: Decodable {
        struct Problem: Decodable {
            var path: String
            var message: String
        }
        var rulesErrors: [Problem]
    }

    /// A broken `.syncfs-rules` saved on B shows in B's `status` at once (no merge needed), on A
    /// once it arrives, as a `rules-error` event on both, and in each log once per distinct error
    /// (not once per read); fixed, it clears everywhere.
    @Test func aRulesErrorShowsWhenTheFileIsSavedAndClearsWhenFixed() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let onA = try Watcher.events([a.root, "--timeout", "120"])
            defer { onA.stop() }
            let onB = try Watcher.events([b.root, "--timeout", "120"])
            defer { onB.stop() }
            func errors(_ mount: TestFolder) -> [RulesStatus.Problem] {
                ((try? mount.statusJSON(of: mount.root)) as RulesStatus?)?.rulesErrors ?? []
            }
            try writeFile(b.path(".syncfs-rules"), "*.txt merge=union\n*.log merge=nonsense\n")
            #expect(
                waitUntil { errors(b).count == 1 }, "B's status shows the error\n\(b.daemonLog())")
            let problem = errors(b).first
            #expect(problem?.path == ".syncfs-rules" && problem?.message.hasPrefix("line 2: ") == true, "\(errors(b))")
            let text = ModelProcess.run([try TestFolder.binaryPath(), "status", b.root], timeout: 60)
            #expect(text.stdout.contains("rules error: .syncfs-rules: line 2: "), "\(text.stdout)")
            #expect(waitUntil { errors(a).count == 1 }, "A's status shows it once it arrives\n\(mounts.logs())")
            for watcher in [onA, onB] {
                #expect(waitUntil { !events(watcher, ["rules-error"]).isEmpty }, "\(watcher.output)")
            }
            // The same error saved again (and read by every check since): no new event, one log line.
            try writeFile(b.path(".syncfs-rules"), "*.txt merge=union\n*.log merge=nonsense\n")
            #expect(b.expectSync())
            usleep(1_500_000)  // scenario: time for an event that must not come
            for watcher in [onA, onB] {
                let seen = events(watcher, ["rules-error"])
                #expect(seen.count == 1, "\(watcher.output)")
                #expect(seen.first?.path == ".syncfs-rules" && seen.first?.message == problem?.message)
            }
            let logged = b.daemonLog(limit: 200_000).components(separatedBy: "line 2: ").count - 1
            #expect(logged == 1, "logged \(logged) times\n\(b.daemonLog())")

            // Another error is another event; fixed, it clears on both mounts.
            try writeFile(b.path(".syncfs-rules"), "*.log merge=\n")
            #expect(waitUntil { events(onB, ["rules-error"]).count == 2 }, "\(onB.output)")
            try writeFile(b.path(".syncfs-rules"), "*.log merge=union\n")
            #expect(waitUntil { errors(b).isEmpty }, "fixed on B: \(errors(b))")
            #expect(waitUntil { errors(a).isEmpty }, "fixed on A: \(errors(a))\n\(mounts.logs())")
            #expect(
                !ModelProcess.run([try TestFolder.binaryPath(), "status", b.root], timeout: 60).stdout.contains(
                    "rules error"))
        }
    }

    /// A broken rules line is logged once, not once per read of the rules (a merge round reads
    /// them many times). Three merges on B with a bad line in the rules: one log line for it.
    @Test func aRulesErrorIsLoggedOnceHoweverManyMergesReadTheRules() throws {
        let directory = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outage = directory + "/outage"
        try SyncedMounts.with(uploadDelay: 20, environmentB: OutageSwitch.environment(outage)) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path(".syncfs-rules"), "*.txt merge=union\n*.log merge=nonsense\n")
            try writeFile(a.path("x.txt"), "base\n")
            #expect(a.expectSync())
            #expect(waitUntil { try readText(b.path("x.txt")) == "base\n" && pathExists(b.path(".syncfs-rules")) })
            for round in 1...3 {
                try writeFile(outage, "")
                try appendFile(a.path("x.txt"), bytes("A\(round)\n"))
                #expect(a.expectSync())
                try appendFile(b.path("x.txt"), bytes("B\(round)\n"))
                usleep(200_000)  // scenario: B's edit is noticed while offline
                unlink(outage)
                #expect(b.expectSync(timeout: 60))
                #expect(
                    waitUntil(timeout: 30) {
                        let text = try readText(a.path("x.txt"))
                        return text.contains("A\(round)\n") && text.contains("B\(round)\n")
                    }, "round \(round) merged\n\(mounts.logs())")
            }
            let log = b.daemonLog(limit: 400_000)
            let merges = log.components(separatedBy: "merged both versions").count - 1
            let lines = log.components(separatedBy: ".syncfs-rules line 2: ").count - 1
            #expect(merges >= 3, "B merged each round: \(merges)\n\(log)")
            #expect(lines == 1, "the bad line was logged \(lines) times\n\(log)")
        }
    }

    /// `user.syncfs.id`: the same 32 hex digits on both mounts and across a rename; read-only
    /// (EPERM, as `user.syncfs.state`), never listed, never synced as a user attribute.
    @Test func theStableIDIsAReadOnlyVirtualAttribute() throws {
        try SyncedMounts.with(uploadDelay: 20) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("doc.txt"), "hello")
            try makeDirectory(a.path("dir"))
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path("doc.txt")) && pathExists(b.path("dir")) })
            let id = try syncfsXattr(a.path("doc.txt"), "id")
            #expect(id.count == 32 && id.allSatisfy { "0123456789abcdef".contains($0) }, "\(id)")
            #expect(try syncfsXattr(b.path("doc.txt"), "id") == id, "the same on every mount")
            let directoryID = try syncfsXattr(b.path("dir"), "id")
            #expect(directoryID.count == 32 && directoryID != id)

            try posix("rename") { rename(a.path("doc.txt"), a.path("dir/moved.txt")) }
            #expect(try syncfsXattr(a.path("dir/moved.txt"), "id") == id, "the same after a rename")
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path("dir/moved.txt")) }, "\(mounts.logs())")
            #expect(try syncfsXattr(b.path("dir/moved.txt"), "id") == id, "the same after a rename on the other mount")

            for mount in [a, b] {
                let path = mount.path("dir/moved.txt")
                expectErrno(EPERM, "setxattr id") { Linux.setxattr(path, "user.syncfs.id", bytes("0"), 0) }
                expectErrno(EPERM, "removexattr id") { Linux.removexattr(path, "user.syncfs.id") }
                expectErrno(EPERM, "setxattr state (the same answer)") {
                    Linux.setxattr(path, "user.syncfs.state", bytes("local"), 0)
                }
                #expect(try listXattrs(path).isEmpty, "never listed")
                #expect(try syncfsXattr(path, "id") == id)
            }
            #expect(try b.syncStatus().pendingEntries == 0, "reading the ID changed nothing")
        }
    }
}
