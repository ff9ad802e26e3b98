import Foundation
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// Which mounts must attach their tree before they serve, and the engine's wait for it
/// (`TreeAttach`, `AttachTracker`; doc/SEMANTICS.md, "The first mount attaches the tree").
@Suite struct TreeAttachTests {
    @Test func onlyADirectoryThatNeverReachedTheEndOfTheFeedNeedsTheAttach() {
        #expect(TreeAttach.isNeeded(StateFacts([:])), "a new state directory")
        #expect(
            TreeAttach.isNeeded(StateFacts(["tree_attached": "0", "feed_cursor": "42"])), "a first attach cut short")
        #expect(!TreeAttach.isNeeded(StateFacts(["tree_attached": "1", "feed_cursor": "42"])))
        #expect(!TreeAttach.isNeeded(StateFacts(["feed_cursor": "42", "mount_count": "3"])), "older than the fact")
        #expect(TreeAttach.isNeeded(StateFacts(["mount_count": "1"])), "mounted, but never followed the feed")
        #expect(TreeAttach.isNeeded(StateFacts(["tree_attached": "yes"])), "an unreadable value is absent")
    }

    @Test func theEndOfTheFeedIsNotedOnce() {
        let attach = TreeAttach(facts: StateFacts([:]))
        attach.noteEntries(256)
        attach.noteEntries(10)
        #expect(attach.progress == TreeAttach.Progress(entries: 266, endReached: false))
        #expect(attach.noteEndReached())
        #expect(!attach.noteEndReached())
        #expect(attach.progress.endReached)
    }

    /// A first attach publishes its entries as `scan-end`'s count, not one `created` each; the
    /// changes after it are published one by one again.
    @Test func anAttachPublishesItsEntriesAsACountThenChangesOneByOne() throws {
        let source = InMemoryContainer()
        let seeding = try FileSystemFixture()
        let seeder = SyncEngine(fileSystem: seeding.fs, container: source, logger: .init(label: "t"))
        seeder.start()
        defer { seeder.stop() }
        for index in 0..<10 { try seeding.makeFile("f\(index)", contents: Array("x".utf8)) }
        try #require(waitUntil(timeout: 30) { seeding.fs.outbox.items.isEmpty }, "seeded")

        let fixture = try FileSystemFixture()
        let events = fixture.fs.changeEvents.subscribe(.everything)
        let engine = SyncEngine(fileSystem: fixture.fs, container: source, logger: .init(label: "t"))
        engine.attaching.prepare()
        engine.start()
        defer { engine.stop() }
        guard case .attached = engine.attaching.waitUntilAttached(stallLimit: .seconds(30), report: { _ in }) else {
            Issue.record("not attached")
            return
        }
        try seeding.makeFile("later", contents: Array("y".utf8))
        var seen: [ChangeEvent] = []
        let laterSeen = waitUntil(timeout: 30) {
            while case .event(let event) = events.next(timeout: 0) { seen.append(event) }
            return seen.contains { $0.kind == .created && $0.path == "later" }
        }
        #expect(laterSeen, "a change after the attach is published: \(seen.map(\.kind))")
        #expect(!seen.contains { $0.kind == .created && $0.path.hasPrefix("f") }, "no event per attached entry")
        let end = seen.first { $0.kind == .scanEnd }
        #expect(end?.counts?.added == 10, "scan-end counts them: \(String(describing: end?.counts))")
    }

    /// A fresh state directory attaches a container's entries, records `tree_attached` = 1, and
    /// the next load of the same database no longer needs the attach.
    @Test func anAttachCompletesAndIsRecorded() throws {
        let source = InMemoryContainer()
        let seeding = try FileSystemFixture()
        let seeder = SyncEngine(fileSystem: seeding.fs, container: source, logger: .init(label: "t"))
        seeder.start()
        for index in 0..<20 { try seeding.makeFile("f\(index)", contents: Array("x".utf8)) }
        let uploaded = waitUntil(timeout: 30) { seeding.fs.outbox.items.isEmpty }
        seeder.stop()
        try #require(uploaded, "the seeding mount did not upload its files")

        let fixture = try FileSystemFixture()
        let engine = SyncEngine(fileSystem: fixture.fs, container: source, logger: .init(label: "t"))
        #expect(engine.attaching.attach.isNeeded)
        engine.attaching.prepare()
        engine.start()
        defer { engine.stop() }
        let outcome = engine.attaching.waitUntilAttached(stallLimit: .seconds(30)) { _ in }
        guard case .attached(let entries) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(entries >= 20, "entries handled: \(entries)")
        #expect(engine.progress.feedCaughtUp, "caught up once attached")
        let names = fixture.fs.live.transact { tree in tree.nodes[.root].map { $0.children.count } ?? 0 }
        #expect(names == 20, "every file is in the tree when the wait returns: \(names)")
        let stored = try fixture.fs.store.load().facts
        #expect(stored[.treeAttached] == true, "recorded and committed before the wait returns")
        #expect(!TreeAttach.isNeeded(stored))
    }

    /// A container that fails every call: the wait gives up after the stall limit with the
    /// follower's failure, and nothing was attached.
    @Test func aContainerThatNeverAnswersEndsTheWaitAfterTheStallLimit() throws {
        let fixture = try FileSystemFixture()
        let container = FaultInjectingContainer(InMemoryContainer())
        container.startOutage()
        let engine = SyncEngine(fileSystem: fixture.fs, container: container, logger: .init(label: "t"))
        engine.attaching.prepare()
        engine.start()
        defer { engine.stop() }
        let started = ContinuousClock.now
        let outcome = engine.attaching.waitUntilAttached(stallLimit: .milliseconds(300)) { _ in }
        guard case .stalled(let entries, let reason) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(entries == 0)
        #expect(reason.contains("injected outage"), "\(reason)")
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        #expect(TreeAttach.isNeeded(try fixture.fs.store.load().facts), "still a first mount")
    }

    /// The wait sleeps until the follower notes something: the end of the feed ends it at once,
    /// long before its next report or any stall limit.
    @Test func theEndOfTheFeedEndsTheWaitAtOnce() throws {
        let fixture = try FileSystemFixture()
        let tracker = AttachTracker(fileSystem: fixture.fs, progress: EngineProgress())
        let waited = Thread.detachNewThreadWithResult {
            tracker.waitUntilAttached(stallLimit: .seconds(3600), interval: .seconds(3600)) { _ in }
        }
        #expect(waitUntil { tracker.changes.waiting == 1 }, "the thread is inside its wait")
        tracker.followerHandled(5)
        tracker.followerReachedEnd()
        #expect(try waited.value(within: .seconds(30)) == .attached(entries: 5))
    }

    /// While nothing happens the wait still reports, once per interval, the entries so far.
    @Test func theWaitReportsEveryIntervalWhileNothingMoves() throws {
        let fixture = try FileSystemFixture()
        let tracker = AttachTracker(fileSystem: fixture.fs, progress: EngineProgress())
        tracker.followerHandled(7)
        let reports = AwaitedVersion()
        let reportedEntries = AwaitedVersion()
        let waited = Thread.detachNewThreadWithResult {
            tracker.waitUntilAttached(stallLimit: .seconds(3600), interval: .milliseconds(10)) { entries in
                reportedEntries.advance(to: UInt64(entries))
                reports.increment()
            }
        }
        #expect(reports.wait(forAtLeast: 3, within: .seconds(30)), "three reports, each after an interval")
        #expect(reportedEntries.value == 7)
        tracker.followerReachedEnd()
        #expect(try waited.value(within: .seconds(30)) == .attached(entries: 7))
    }
}
