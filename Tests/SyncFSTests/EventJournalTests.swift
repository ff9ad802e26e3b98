import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// A journal over a temporary state directory, with a clock the test moves.
private final class JournalFixture: @unchecked Sendable {
    let directory: TemporaryDirectory
    let now = Atomic<Int64>(1_000_000_000_000_000_000)
    let bounds: EventJournal.Bounds

    init(bounds: EventJournal.Bounds = EventJournal.Bounds()) throws {
        directory = try TemporaryDirectory("syncfs-journal")
        self.bounds = bounds
    }

    deinit { directory.remove() }

    var path: String { directory.path + "/" + EventJournalFile.name }

    func open(_ directoryPath: String? = nil) throws -> EventJournal {
        let clock: @Sendable () -> Int64 = { [self] in now.load(ordering: .relaxed) }
        return try #require(
            EventJournal.open(
                directory: directoryPath ?? directory.path, bounds: bounds, logger: Logger(label: "journal-tests"),
                clock: clock))
    }

    /// The file's lines.
    var lines: [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

private func created(_ path: String) -> ChangeEvent {
    ChangeEvent(kind: .created, path: path, origin: .local, fileID: .root, type: .file)
}

/// The paths of a replay's events, or `reset: why`.
private func replayed(_ replay: EventJournal.Replay) -> [String] {
    switch replay {
    case .events(let events): events.map(\.path)
    case .reset(let reason): ["reset: \(reason)"]
    }
}

@Suite("EventJournal: cursors")
struct EventCursorTests {
    @Test func onlyTheExactFormParses() {
        let identity = String(repeating: "ab", count: 16)
        #expect(EventCursor.parse("\(identity).42") == EventCursor(journal: identity, sequence: 42))
        #expect(EventCursor.parse("\(identity).18446744073709551615")?.sequence == UInt64.max)
        for bad in [
            "", ".", "\(identity)", "\(identity).", "\(identity).-1", "\(identity).+1", "\(identity).1.2",
            "\(identity).18446744073709551616", "\(identity).000000000000000000001",
            String(repeating: "AB", count: 16) + ".1", String(repeating: "ab", count: 15) + ".1",
            "\(identity).1 ", "\(identity).١", String(repeating: "9", count: 100_000),
        ] {
            #expect(EventCursor.parse(bad) == nil, "\(bad.prefix(80))")
        }
    }

    @Test func anEventLineCarriesItsCursorAfterTheTime() {
        let line = ChangeEvent(
            kind: .created, path: "f", origin: .local, fileID: nil, type: .file, time: "2026-11-21T15:45:02.123Z"
        ).jsonLine(cursor: "c.1")
        #expect(
            String(decoding: line, as: UTF8.self)
                == #"{"time":"2026-11-21T15:45:02.123Z","cursor":"c.1","kind":"created","path":"f","origin":"local","type":"file"}"#
                + "\n")
    }
}

@Suite("EventJournal: the journal")
struct EventJournalTests {
    @Test func eventsAreNumberedAndReplayedAfterACursorWrittenOrNot() throws {
        let fixture = try JournalFixture()
        let journal = try fixture.open()
        defer { journal.close() }
        let hub = ChangeEvents(journal: journal)
        #expect(hub.isObserved, "a journal observes every event")
        let (subscription, position) = hub.subscribeAtPosition(.everything)
        #expect(position == 0)
        for name in ["a", "b", "c"] { hub.publish(created(name)) }
        var numbers: [UInt64?] = []
        while case .event(let event) = subscription.next(timeout: 0) { numbers.append(event.sequence) }
        #expect(numbers == [1, 2, 3])
        #expect(replayed(journal.replay(after: journal.cursor(1), through: 3)) == ["b", "c"], "from memory")
        journal.flush()
        #expect(fixture.lines.count == 4, "a header and three events: \(fixture.lines)")
        hub.publish(created("d"))
        #expect(replayed(journal.replay(after: journal.cursor(1), through: 4)) == ["b", "c", "d"], "file, then memory")
        #expect(replayed(journal.replay(after: journal.cursor(0), through: 2)) == ["a", "b"], "up to the position")
        #expect(replayed(journal.replay(after: journal.cursor(4), through: 4)) == [])
    }

    /// A watcher that replays up to the position it subscribed at, then takes the live events,
    /// gets every event once while another thread publishes and the writer writes.
    @Test func aReplayThenLiveEventsMissAndRepeatNothingUnderConcurrentPublishing() throws {
        var bounds = EventJournal.Bounds()
        bounds.writeDelay = 0.001
        let fixture = try JournalFixture(bounds: bounds)
        let journal = try fixture.open()
        defer { journal.close() }
        let hub = ChangeEvents(journal: journal)
        let total = 20_000
        let started = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            for index in 1...total {
                hub.publish(created("f\(index)"))
                if index == 2_000 { started.signal() }
            }
            done.signal()
        }.start()
        started.wait()
        let (subscription, position) = hub.subscribeAtPosition(.everything, limit: total)
        defer { subscription.cancel() }
        guard case .events(let replay) = journal.replay(after: journal.cursor(0), through: position ?? 0) else {
            Issue.record("the replay was refused")
            return
        }
        done.wait()
        var numbers = replay.compactMap(\.sequence)
        while case .event(let event) = subscription.next(timeout: 0) { numbers.append(event.sequence ?? 0) }
        #expect(
            (position ?? 0) >= 2_000 && (position ?? 0) < UInt64(total), "subscribed in the middle: \(position ?? 0)")
        #expect(numbers == Array(1...UInt64(total)), "\(numbers.count) events")
    }

    @Test func aCleanlyClosedJournalContinuesAfterReopening() throws {
        let fixture = try JournalFixture()
        let first = try fixture.open()
        for name in ["a", "b"] { _ = first.append(created(name)) }
        let identity = first.identity
        first.close()
        #expect(fixture.lines.last == "C 2")
        var mode = stat()
        #expect(stat(fixture.path, &mode) == 0 && mode.st_mode & 0o777 == 0o600, "private to the daemon's user")

        let second = try fixture.open()
        defer { second.close() }
        #expect(second.identity == identity && second.lastSequence == 2)
        #expect(second.append(created("c")) == 3)
        #expect(replayed(second.replay(after: second.cursor(0), through: 3)) == ["a", "b", "c"])
    }

    @Test func aNewStateDatabaseStartsANewJournal() throws {
        let fixture = try JournalFixture()
        let first = try fixture.open()
        _ = first.append(created("a"))
        let identity = first.identity
        first.close()
        let journal = try #require(
            EventJournal.open(directory: fixture.directory.path, anew: true, logger: Logger(label: "journal-tests")))
        defer { journal.close() }
        #expect(journal.identity != identity && journal.lastSequence == 0)
        #expect(
            replayed(journal.replay(after: EventCursor(journal: identity, sequence: 1).text, through: 0)).first?
                .hasPrefix("reset") == true)
    }

    @Test func aJournalNotClosedSkipsNumbersAndResetsCursorsItMayHaveLost() throws {
        let fixture = try JournalFixture()
        let copy = try TemporaryDirectory("syncfs-journal-crash")
        defer { copy.remove() }
        let running = try fixture.open()
        for name in ["a", "b"] { _ = running.append(created(name)) }
        running.flush()
        _ = running.append(created("unwritten"))
        // The file as a kill -9 now would leave it.
        try FileManager.default.copyItem(atPath: fixture.path, toPath: copy.path + "/" + EventJournalFile.name)
        running.close()

        let restarted = try fixture.open(copy.path)
        defer { restarted.close() }
        let hole = 2 + EventJournal.sequenceSkip
        #expect(restarted.lastSequence == hole, "numbers 3… may have been given out: skipped")
        #expect(restarted.append(created("after")) == hole + 1)
        #expect(
            replayed(restarted.replay(after: restarted.cursor(1), through: hole + 1)).first?.hasPrefix("reset") == true)
        #expect(
            replayed(restarted.replay(after: restarted.cursor(3), through: hole + 1)).first?.hasPrefix("reset") == true)
        #expect(replayed(restarted.replay(after: restarted.cursor(hole), through: hole + 1)) == ["after"])
    }

    @Test func theJournalKeepsAtMostItsCountOfEvents() throws {
        var bounds = EventJournal.Bounds()
        bounds.events = 10
        let fixture = try JournalFixture(bounds: bounds)
        let journal = try fixture.open()
        defer { journal.close() }
        for index in 1...30 { _ = journal.append(created("f\(index)")) }
        journal.flush()
        #expect(fixture.lines.count == 11, "a header and the last 10: \(fixture.lines)")
        #expect(fixture.lines.first?.hasSuffix(" 20") == true, "the header's floor: \(fixture.lines.first ?? "")")
        #expect(
            replayed(journal.replay(after: journal.cursor(19), through: 30)) == [
                "reset: the events after the cursor were trimmed"
            ])
        #expect(replayed(journal.replay(after: journal.cursor(27), through: 30)) == ["f28", "f29", "f30"])
        for index in 31...32 { _ = journal.append(created("f\(index)")) }
        journal.flush()
        #expect(fixture.lines.count == 13, "up to twice the count before the next trim")
        for index in 33...40 { _ = journal.append(created("f\(index)")) }
        journal.flush()
        #expect(fixture.lines.count == 21, "twice the count is kept: \(fixture.lines.count - 1)")
        _ = journal.append(created("f41"))
        journal.flush()
        #expect(fixture.lines.count == 11, "over twice the count, trimmed to the count")
    }

    @Test func eventsOlderThanTheAgeAreDropped() throws {
        var bounds = EventJournal.Bounds()
        bounds.age = 1_000
        bounds.ageSlack = 100
        let fixture = try JournalFixture(bounds: bounds)
        let journal = try fixture.open()
        defer { journal.close() }
        for index in 1...3 { _ = journal.append(created("old\(index)")) }
        journal.flush()
        fixture.now.add(1_101, ordering: .relaxed)
        _ = journal.append(created("new"))
        journal.flush()
        #expect(replayed(journal.replay(after: journal.cursor(0), through: 4)).first?.hasPrefix("reset") == true)
        #expect(replayed(journal.replay(after: journal.cursor(3), through: 4)) == ["new"])
        #expect(fixture.lines.count == 2, "\(fixture.lines)")
    }

    @Test func foreignForgedAndMalformedCursorsAreReset() throws {
        let fixture = try JournalFixture()
        let journal = try fixture.open()
        defer { journal.close() }
        _ = journal.append(created("a"))
        let other = String(repeating: "0", count: 32)
        for cursor in [
            "\(other).0", journal.cursor(2), journal.cursor(UInt64.max), "nonsense",
            String(repeating: "x", count: 1 << 20),
        ] {
            #expect(replayed(journal.replay(after: cursor, through: 1)).first?.hasPrefix("reset") == true)
        }
    }

    @Test func aDamagedFileIsSetAsideAndANewJournalStarts() throws {
        let fixture = try JournalFixture()
        for damaged in [
            "not a journal\n", "\(EventJournalFile.magic) \(String(repeating: "a", count: 32)) 0\nE 2 5 {}\nE 1 6 {}\n",
            "\(EventJournalFile.magic) \(String(repeating: "a", count: 32)) 0\nE x 5 {}\n",
        ] {
            try damaged.write(toFile: fixture.path, atomically: false, encoding: .utf8)
            let journal = try fixture.open()
            #expect(journal.identity != String(repeating: "a", count: 32) && journal.lastSequence == 0)
            #expect(journal.append(created("fresh")) == 1)
            journal.close()
            let names = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path)
            #expect(names.contains { $0.hasPrefix(EventJournalFile.name + ".damaged-") }, "\(names)")
            for name in names where name.contains(".damaged-") {
                try FileManager.default.removeItem(atPath: fixture.directory.path + "/" + name)
            }
        }
    }

    @Test func aLineCutShortAtTheEndIsDroppedNotTheJournal() throws {
        let fixture = try JournalFixture()
        let first = try fixture.open()
        _ = first.append(created("a"))
        first.flush()
        let identity = first.identity
        first.close()
        let handle = try #require(FileHandle(forWritingAtPath: fixture.path))
        handle.seekToEndOfFile()
        handle.write(Data("E 2 12 {\"ti".utf8))
        try handle.close()
        let reopened = try fixture.open()
        defer { reopened.close() }
        #expect(reopened.identity == identity)
        #expect(replayed(reopened.replay(after: reopened.cursor(0), through: 1)) == ["a"])
    }
}

@Suite("EventJournal: in the file system")
struct EventJournalFileSystemTests {
    @Test func changesAreJournaledWithNobodySubscribedAndSurviveAReopen() throws {
        let fixture = try FileSystemFixture()
        let journal = try #require(fixture.fs.changeEvents.journal)
        let start = journal.cursor(journal.lastSequence)
        _ = try fixture.makeFile("f", contents: bytes("x"))
        try fixture.reopen()
        let reopened = try #require(fixture.fs.changeEvents.journal)
        #expect(reopened.identity == journal.identity)
        let replay = reopened.replay(after: start, through: reopened.lastSequence)
        #expect(replayed(replay).prefix(1) == ["f"], "\(replay)")
    }

    @Test func aSnapshotListsEntriesAtTheMomentItsSubscriptionStarts() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        _ = try fixture.makeFile("a", in: directory, contents: bytes("1234"))
        _ = try fixture.makeFile("top", contents: bytes("x"))
        let hub = fixture.fs.changeEvents
        let (entries, (subscription, position)) = fixture.fs.snapshot(below: "d") {
            hub.subscribeAtPosition(.everything)
        }
        defer { subscription.cancel() }
        #expect(entries.map(\.path) == ["d", "d/a"])
        #expect(entries.map(\.kind) == [.directory, .file] && entries.last?.size == 4)
        #expect(entries.allSatisfy { $0.state == .modified || $0.state == .local }, "\(entries.map(\.state))")
        #expect(fixture.fs.snapshot(below: "missing") { 0 }.entries.isEmpty)
        _ = try fixture.makeFile("b", in: directory, contents: bytes("y"))
        guard case .event(let next) = subscription.next(timeout: 5) else {
            Issue.record("no live event after the snapshot")
            return
        }
        #expect(next.path == "d/b" && next.sequence == (position ?? 0) + 1)
    }
}

@Suite("EventJournal: the folder's shutdown")
struct EventJournalShutDownTests {
    /// A write burst whose last close the session never delivered (an unmount with the RELEASE
    /// still queued) ends at shutdown: its `modified` event is in the journal, not lost.
    @Test func aBurstOpenAtShutDownIsJournaledAsModified() throws {
        let fixture = try FileSystemFixture()
        let (_, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("f"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        try fixture.write(handle, Array("unreleased".utf8), at: 0)
        try fixture.shutDown()
        close(handle.descriptor)
        let journal = try #require(
            EventJournal.open(directory: fixture.directory.path, anew: false, logger: Logger(label: "journal-tests")))
        defer { journal.close() }
        guard case .events(let events) = journal.replay(after: journal.cursor(0), through: journal.lastSequence) else {
            Issue.record("the journal was reset")
            return
        }
        #expect(events.map { "\($0.kind.rawValue) \($0.path)" } == ["created f", "modified f"])
    }
}
