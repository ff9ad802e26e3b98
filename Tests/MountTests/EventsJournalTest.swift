import Foundation
import Glibc
import TestSupport
import Testing

/// The events journal and the live query (doc/CLI.md, "events"): every line carries its cursor;
/// `--since CURSOR` replays what happened while a watcher was away, also across an unmount and
/// a remount of the same state directory, then continues live; a cursor the journal cannot
/// continue gets `reset` and the snapshot; `--snapshot` lists the entries, then `snapshot-end`,
/// then live events with no gap and no duplicate while files are being created; `--state`
/// keeps the entries in the states named.
@Suite(.serialized)
struct EventsJournalTest {
    /// One line of `events`, as a dictionary.
    private struct Line: CustomStringConvertible {
        let fields: [String: Any]
        var kind: String { fields["kind"] as? String ?? "?" }
        var path: String { fields["path"] as? String ?? "" }
        var cursor: String? { fields["cursor"] as? String }
        var state: String? { fields["state"] as? String }
        var description: String { "\(kind) \(path)" }

        /// The watcher's lines, without the sync rounds' (`scan-begin`, `scan-end`, `synced`: they
        /// come whenever the mount catches up; `SyncRoundsMountTest` covers them).
        static func parse(_ watcher: Watcher) -> [Line] {
            watcher.lines.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }.map(Line.init).filter { !["scan-begin", "scan-end", "synced"].contains($0.kind) }
        }
    }

    /// The lines of changes to entries (mount events such as `online` left out).
    private func changes(_ lines: [Line]) -> [String] {
        lines.filter { ["created", "modified", "deleted", "renamed"].contains($0.kind) }.map(\.description)
    }

    /// Waits until `watcher` printed lines whose changes are `expected`; records an issue otherwise.
    private func expectChanges(
        _ watcher: Watcher, _ expected: [String], _ context: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        if !waitUntil(timeout: 30, { changes(Line.parse(watcher)) == expected }) {
            Issue.record(
                "\(context): expected \(expected), got \(changes(Line.parse(watcher)))\n\(watcher.output)",
                sourceLocation: sourceLocation)
        }
    }

    @Test func aWatcherAwayReplaysWhatHappenedAlsoAcrossARemount() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let first = try Watcher.events([folder.root])
        try writeFile(folder.path("before.txt"), "x")
        expectChanges(first, ["created before.txt", "modified before.txt"], "the first watcher")
        #expect(first.stop() == 0)
        let cursors = Line.parse(first).compactMap(\.cursor)
        #expect(cursors.count == Line.parse(first).count, "every line has a cursor: \(first.output)")
        let cursor = try #require(cursors.last)

        // Away: changes, an unmount and a remount of the same state directory, more changes.
        try makeDirectory(folder.path("dir"))
        try writeFile(folder.path("dir/inside.txt"), "y")
        try folder.unmount()
        try folder.remount()
        try posix("unlink") { unlink(folder.path("before.txt")) }

        let back = try Watcher.events([folder.root, "--since", cursor])
        let folderOnly = try Watcher.events([folder.root, "dir/", "--since", cursor])
        defer {
            back.stop()
            folderOnly.stop()
        }
        let away = ["created dir", "created dir/inside.txt", "modified dir/inside.txt", "deleted before.txt"]
        expectChanges(back, away, "the replay after the cursor")
        expectChanges(folderOnly, Array(away.prefix(3)), "the replay of dir/ only")
        // Then live, with nothing twice.
        try writeFile(folder.path("dir/later.txt"), "z")
        expectChanges(
            back, away + ["created dir/later.txt", "modified dir/later.txt"], "live after the replay, once each")
        let replayedCursors = Line.parse(back).compactMap(\.cursor)
        #expect(Set(replayedCursors).count == replayedCursors.count && !replayedCursors.contains(cursor))
    }

    /// A daemon killed may have numbered events it never wrote: a cursor from before the kill is
    /// answered with `reset` and the snapshot, never with a replay that could miss some.
    @Test func aCursorFromBeforeAKill9GetsResetNotAGap() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let watcher = try Watcher.events([folder.root])
        try writeFile(folder.path("a.txt"), "a")
        // Made durable, so the tree after the kill has it (the journal is not what is tested).
        try withFile(folder.path("a.txt"), O_RDONLY) { fd in try posix("fsync") { fsync(fd) } }
        expectChanges(watcher, ["created a.txt", "modified a.txt"], "before the kill")
        watcher.stop()
        let cursor = try #require(Line.parse(watcher).compactMap(\.cursor).last)
        try folder.kill9()
        try folder.remount()
        let back = try Watcher.events([folder.root, "--since", cursor])
        defer { back.stop() }
        #expect(waitUntil { Line.parse(back).contains { $0.kind == "snapshot-end" } }, "\(back.output)")
        #expect(Line.parse(back).map(\.description) == ["reset ", "entry a.txt", "snapshot-end "], "\(back.output)")
        #expect(folder.daemonLog().contains("not closed last time"), "\(folder.daemonLog())")
        // The new cursor continues.
        let fresh = try #require(Line.parse(back).last?.cursor)
        try writeFile(folder.path("b.txt"), "b")
        expectChanges(back, ["created b.txt", "modified b.txt"], "live after the reset")
        back.stop()
        let again = try Watcher.events([folder.root, "--since", fresh])
        defer { again.stop() }
        expectChanges(again, ["created b.txt", "modified b.txt"], "a replay from the cursor after the reset")
        #expect(!Line.parse(again).contains { $0.kind == "reset" }, "\(again.output)")
    }

    @Test func aCursorTheJournalCannotContinueGetsResetThenTheSnapshot() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        try writeFile(folder.path("a.txt"), "a")
        try makeDirectory(folder.path("d"))
        let another = try TestFolder.make(.mount)
        defer { another.tearDown() }
        let foreign = try Watcher.events([another.root])
        try writeFile(another.path("x"), "x")
        #expect(waitUntil { Line.parse(foreign).contains { $0.cursor != nil } }, "\(foreign.output)")
        let foreignCursor = try #require(Line.parse(foreign).compactMap(\.cursor).first)
        foreign.stop()

        for cursor in [
            foreignCursor, "garbage", String(repeating: "7", count: 5000), "\(String(repeating: "0", count: 32)).1",
        ] {
            let watcher = try Watcher.events([folder.root, "--since", cursor])
            defer { watcher.stop() }
            #expect(
                waitUntil { Line.parse(watcher).contains { $0.kind == "snapshot-end" } },
                "\(cursor.prefix(40)): \(watcher.output) \(watcher.errors)")
            let lines = Line.parse(watcher)
            #expect(lines.first?.kind == "reset", "\(watcher.output)")
            #expect(lines.dropFirst().prefix(2).map(\.description) == ["entry a.txt", "entry d"], "\(watcher.output)")
            #expect(lines.last?.kind == "snapshot-end" && lines.last?.cursor != nil, "\(watcher.output)")
            let entry = watcher.lines.dropFirst().first ?? ""
            #expect(
                entry.hasPrefix(#"{"time":""#) && entry.contains(#""kind":"entry","path":"a.txt","fileID":""#)
                    && entry.contains(#""type":"file","size":1,"state":""#), "keys in order: \(entry)")
            try writeFile(folder.path("d/new-\(watcher.pid)"), "n")
            #expect(
                waitUntil { Line.parse(watcher).contains { $0.description == "created d/new-\(watcher.pid)" } },
                "live after the snapshot: \(watcher.output)")
        }
    }

    @Test func aSnapshotThenLiveEventsHaveNoGapAndNoDuplicateWhileFilesAreCreated() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        try makeDirectory(folder.path("busy"))
        let total = 400
        let creator = Thread {
            for index in 0..<total { _ = try? writeFile(folder.path("busy/f\(index)"), "\(index)") }
        }
        creator.start()
        _ = waitUntil { ((try? listDirectory(folder.path("busy")).count) ?? 0) >= 50 }
        let watcher = try Watcher.events([folder.root, "busy/", "--snapshot"])
        defer { watcher.stop() }
        #expect(waitUntil(timeout: 60) { ((try? listDirectory(folder.path("busy")).count) ?? 0) == total })
        let expected = Set((0..<total).map { "busy/f\($0)" })
        func seen() -> [String] {
            let lines = Line.parse(watcher)
            let listed = lines.filter { $0.kind == "entry" }.map(\.path)
            let created = lines.filter { $0.kind == "created" }.map(\.path)
            return (listed + created).filter { $0 != "busy" }
        }
        #expect(waitUntil(timeout: 30) { Set(seen()) == expected }, "\(seen().count) of \(total)")
        let all = seen()
        #expect(all.count == Set(all).count, "an entry listed is not created again: \(all.count) lines")
        let lines = Line.parse(watcher)
        let end = try #require(lines.firstIndex { $0.kind == "snapshot-end" }, "\(watcher.output.prefix(2000))")
        #expect(
            lines[..<end].allSatisfy { $0.kind == "entry" } && lines[(end + 1)...].allSatisfy { $0.kind != "entry" })
        #expect(lines[..<end].contains { $0.path == "busy" }, "the folder itself is listed")
        #expect(lines[..<end].allSatisfy { $0.fields["fileID"] != nil && $0.fields["size"] != nil && $0.state != nil })
    }

    @Test func stateKeepsTheEntriesInTheStatesNamed() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "600000"])
        defer { folder.tearDown() }
        try writeFile(folder.path("marker.txt"), "m")
        try writeFile(folder.path("waiting.txt"), "not uploaded yet")
        #expect(describeState(folder.path("waiting.txt")) == "modified")
        let modified = try Watcher.events([folder.root, "--snapshot", "--state", "modified,uploading"])
        let local = try Watcher.events([folder.root, "--snapshot", "--state", "local"])
        defer {
            modified.stop()
            local.stop()
        }
        for watcher in [modified, local] {
            #expect(waitUntil { Line.parse(watcher).contains { $0.kind == "snapshot-end" } }, "\(watcher.output)")
        }
        #expect(
            Line.parse(modified).map(\.description) == ["entry marker.txt", "entry waiting.txt", "snapshot-end "],
            "\(modified.output)")
        #expect(Line.parse(modified).first?.state == "modified")
        #expect(Line.parse(local).map(\.description) == ["snapshot-end "], "\(local.output)")
        // Live lines too: a new file is modified, so only the first watcher shows it.
        try writeFile(folder.path("new.txt"), "n")
        #expect(waitUntil { changes(Line.parse(modified)).contains("modified new.txt") }, "\(modified.output)")
        // A deletion goes to every watcher (the entry left whatever list it was in): once the
        // second has it, it has passed over new.txt's lines.
        try posix("unlink") { unlink(folder.path("marker.txt")) }
        #expect(waitUntil { changes(Line.parse(local)).contains("deleted marker.txt") }, "\(local.output)")
        #expect(changes(Line.parse(local)) == ["deleted marker.txt"], "\(local.output)")

        let bad = ModelProcess.run(
            [try TestFolder.binaryPath(), "events", folder.root, "--state", "online,nope"], timeout: 30)
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.stderr.contains("nope") && bad.stderr.contains("online, downloading, local"), "\(bad.stderr)")
        let both = ModelProcess.run(
            [try TestFolder.binaryPath(), "events", folder.root, "--snapshot", "--since", "x"], timeout: 30)
        #expect(both.status == 64, "\(both)")
    }
}
