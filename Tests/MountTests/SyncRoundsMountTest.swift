import Foundation
import Glibc
import TestSupport
import Testing

/// Sync rounds and interactive conflicts on real mounts (doc/SEMANTICS.md, "Sync rounds" and
/// "Conflicts and merges"): `synced` after an edit with what went each way, `scan-begin` /
/// `scan-end` around a catch-up after being offline, the detailed `conflict` event, and each form
/// of `resolve` ending with the same files on both mounts.
@Suite(.serialized)
struct SyncRoundsMountTest {
    /// A line of `events` with the fields of the sync rounds and conflicts.
    struct RoundLine: Decodable {
        struct Version: Decodable {
            var path: String?
            var fileID: String?
            var version: UInt64?
            var size: Int64?
            var mtime: String?
            var device: String?
        }

        struct Conflict: Decodable {
            var copy: String
            var copyFileID: String
            var host: String
            var reason: String
            var local: Version?
            var remote: Version?
            var base: Version?
        }

        var kind: String
        var path: String?
        var message: String?
        var origin: String?
        var counts: [String: Int64]?
        var conflict: Conflict?
    }

    private func lines(_ watcher: Watcher, _ kinds: Set<String>) -> [RoundLine] {
        watcher.lines.compactMap { try? JSONDecoder().decode(RoundLine.self, from: Data($0.utf8)) }
            .filter { kinds.contains($0.kind) }
    }

    @Test(arguments: [false, true]) func anEditIsSyncedOnBothMountsWithWhatWentEachWay(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            #expect(a.expectSync() && b.expectSync())
            let onA = try Watcher.events([a.root, "--timeout", "120"])
            defer { onA.stop() }
            let onB = try Watcher.events([b.root, "--timeout", "120"])
            defer { onB.stop() }
            let oneEntry = try Watcher.events([b.root, "note.txt", "--timeout", "120"])
            defer { oneEntry.stop() }
            try writeFile(a.path("note.txt"), "hello")
            #expect(
                waitUntil { lines(onA, ["synced"]).contains { ($0.counts?["sent"] ?? 0) >= 1 } },
                "A: \(onA.output)\n\(mounts.logs())")
            #expect(
                waitUntil { lines(onB, ["synced"]).contains { ($0.counts?["received"] ?? 0) >= 1 } },
                "B: \(onB.output)\n\(mounts.logs())")
            let sent = lines(onA, ["synced"]).first { ($0.counts?["sent"] ?? 0) >= 1 }
            #expect(sent?.counts?["bytesUploaded"] == 5 && sent?.path == "", "\(onA.output)")
            #expect(waitUntil { !oneEntry.lines.isEmpty })
            #expect(
                lines(oneEntry, ["synced"]).isEmpty, "a watcher of one entry gets its changes only: \(oneEntry.output)")
        }
    }

    @Test(arguments: [false, true]) func aCatchUpAfterBeingOfflineIsAScanWithCounts(overServer: Bool) throws {
        let directory = try makeTemporaryDirectory("syncfs-rounds")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outage = directory + "/outage"
        try SyncedMounts.with(uploadDelay: 20, environmentB: OutageSwitch.environment(outage), overServer: overServer) {
            mounts in
            let (a, b) = (mounts.a, mounts.b)
            let watcher = try Watcher.events([b.root, "some/folder/", "--timeout", "120"])
            defer { watcher.stop() }
            try writeFile(outage, "")
            #expect(waitUntil(timeout: 30) { !lines(watcher, ["offline"]).isEmpty }, "\(watcher.output)")
            try writeFile(a.path("one.txt"), "1")
            try writeFile(a.path("two.txt"), "2")
            #expect(a.expectSync())
            #expect(lines(watcher, ["scan-begin", "scan-end"]).isEmpty, "no scan while the feed fails")
            unlink(outage)
            #expect(
                waitUntil(timeout: 30) { !lines(watcher, ["synced"]).isEmpty }, "\(watcher.output)\n\(mounts.logs())")
            let rounds = lines(watcher, ["scan-begin", "scan-end", "synced"])
            #expect(rounds.map(\.kind) == ["scan-begin", "scan-end", "synced"], "\(watcher.output)")
            #expect(rounds.first?.message == "catch-up")
            #expect(rounds.dropFirst().first?.counts?["added"] == 2, "\(watcher.output)")
            #expect(rounds.last?.counts?["received"] == 2, "\(watcher.output)")
            #expect(try readText(b.path("two.txt")) == "2")
        }
    }

    /// Four files edited on both mounts while neither uploads, then A syncs, then B: B's commits
    /// are refused, and B keeps its versions as conflict copies (the originals take A's).
    private func conflictsOnB(_ mounts: SyncedMounts, _ names: [String]) throws -> [String: String] {
        let (a, b) = (mounts.a, mounts.b)
        for name in names { try writeFile(a.path(name), "base of \(name)\n") }
        try #require(a.expectSync())
        try #require(waitUntil { try names.allSatisfy { try readText(b.path($0)) == "base of \($0)\n" } })
        for name in names {
            try writeFile(a.path(name), "A's \(name)\n")
            try writeFile(b.path(name), "B's \(name)\n")
        }
        #expect(a.expectSync())
        #expect(b.expectSync())
        var copies: [String: String] = [:]
        try #require(
            waitUntil {
                copies = [:]
                for entry in try listDirectory(a.root) where entry.contains(" (conflict from ") {
                    copies[String(entry.prefix { $0 != " " }) + ".txt"] = entry
                }
                return try copies.count == names.count && listDirectory(b.root).count == 2 * names.count
            }, "both mounts see the copies\n\(mounts.logs())")
        return copies
    }

    @Test(arguments: [false, true]) func aConflictCopyIsAnEventWithBothVersionsAndTheBase(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 600_000, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let watcher = try Watcher.events([b.root, "--timeout", "120"])
            defer { watcher.stop() }
            let onA = try Watcher.events([a.root, "plan.txt", "--timeout", "120"])
            defer { onA.stop() }
            let copies = try conflictsOnB(mounts, ["plan.txt"])
            #expect(waitUntil { !lines(watcher, ["conflict"]).isEmpty }, "\(watcher.output)")
            let event = try #require(lines(watcher, ["conflict"]).first)
            let details = try #require(event.conflict, "\(watcher.output)")
            #expect(event.path == "plan.txt" && event.origin == "local")
            #expect(details.copy == copies["plan.txt"], "\(details.copy)")
            #expect(details.copyFileID.count == 32 && !details.host.isEmpty && !details.reason.isEmpty)
            #expect(details.local?.path == details.copy && details.local?.size == Int64("B's plan.txt\n".utf8.count))
            #expect(details.remote?.path == "plan.txt" && details.remote?.size == Int64("A's plan.txt\n".utf8.count))
            let remoteVersion = details.remote?.version ?? 0
            let baseVersion = details.base?.version ?? .max
            #expect(baseVersion < remoteVersion, "the base is older than A's version: \(watcher.output)")
            #expect(details.remote?.device?.isEmpty == false && details.remote?.mtime?.hasSuffix("Z") == true)
            // A sees the copy arrive: its own event, the original being the version A had.
            #expect(waitUntil { !lines(onA, ["conflict"]).isEmpty }, "\(onA.output)")
            let arrived = try #require(lines(onA, ["conflict"]).first)
            #expect(arrived.origin == "remote" && arrived.conflict?.copy == details.copy, "\(onA.output)")
            #expect(arrived.conflict?.local?.path == "plan.txt" && arrived.conflict?.remote?.path == details.copy)
        }
    }

    @Test(arguments: [false, true]) func eachFormOfResolveEndsTheSameOnBothMounts(overServer: Bool) throws {
        try SyncedMounts.with(uploadDelay: 600_000, overServer: overServer) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let copies = try conflictsOnB(mounts, ["local.txt", "remote.txt", "both.txt", "merged.txt"])
            let merge = try makeTemporaryDirectory("syncfs-merge") + "/merge.txt"
            defer { try? FileManager.default.removeItem(atPath: (merge as NSString).deletingLastPathComponent) }
            try writeFile(merge, "merged by hand\n")
            // Bad input first: nothing changes.
            try b.expectCommand(["resolve", b.path("local.txt"), "--keep", "local", "--with", merge], status: 64)
            try b.expectCommand(["resolve", b.path("local.txt"), "--with", merge + ".missing"], status: 65)
            try b.expectCommand(["resolve", b.path("local.txt"), "--with", "/tmp"], status: 65)
            try writeFile(b.path("calm.txt"), "no conflict")
            try b.expectCommand(["resolve", b.path("calm.txt"), "--keep", "remote"], status: 1)
            #expect(try listDirectory(b.root).count == 9, "nothing was deleted")

            // On B the copies hold B's versions: `local` is B's, `remote` A's.
            try b.expectCommand(["resolve", b.path("local.txt"), "--keep", "local"])
            // On A the originals hold A's versions: `remote` is B's (the copy's).
            try a.expectCommand(["resolve", a.path("remote.txt"), "--keep", "remote"])
            try a.expectCommand(["resolve", a.path(try #require(copies["both.txt"])), "--keep", "both"])
            try b.expectCommand(["resolve", b.path("merged.txt"), "--with", merge])
            #expect(a.expectSync() && b.expectSync())
            let expected: [String: String] = [
                "local.txt": "B's local.txt\n", "remote.txt": "B's remote.txt\n", "both.txt": "A's both.txt\n",
                try #require(copies["both.txt"]): "B's both.txt\n", "merged.txt": "merged by hand\n",
                "calm.txt": "no conflict",
            ]
            for folder in [a, b] {
                #expect(
                    waitUntil {
                        try listDirectory(folder.root).sorted() == expected.keys.sorted()
                            && expected.allSatisfy { name, text in (try? readText(folder.path(name))) == text }
                    }, "\(folder.root): \((try? listDirectory(folder.root).sorted()) ?? [])\n\(mounts.logs())")
                let listed = try folder.expectCommand(["conflicts", folder.root, "--json"]).stdout
                #expect(listed.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(listed)")
            }
        }
    }
}
