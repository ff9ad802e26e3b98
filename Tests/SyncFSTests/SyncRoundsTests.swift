import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// What a subscription received so far, without waiting.
private func received(_ subscription: ChangeSubscription) -> [ChangeEvent] {
    var events: [ChangeEvent] = []
    while case .event(let event) = subscription.next(timeout: 0) { events.append(event) }
    return events
}

/// `SyncRounds` on its own: the condition is a flag the test sets.
@Suite("SyncRounds: when scan-begin, scan-end and synced are published")
struct SyncRoundsTests {
    final class Condition: Sendable {
        let upToDate = Atomic(false)
    }

    private func rounds(_ condition: Condition, interval: Duration = .zero) -> (SyncRounds, ChangeSubscription) {
        let hub = ChangeEvents()
        let subscription = hub.subscribe(.everything)
        let rounds = SyncRounds(events: hub, progress: EngineProgress(), minimumInterval: interval) {
            condition.upToDate.load(ordering: .relaxed)
        }
        return (rounds, subscription)
    }

    /// A take while the mount stays up to date (a change held as ignored, looked at again) is
    /// no round (failed before: each write to an ignored file gave a `synced`).
    @Test func aTakeThatLeavesTheMountUpToDateIsNoRound() {
        let condition = Condition()
        condition.upToDate.store(true, ordering: .relaxed)
        let (rounds, subscription) = rounds(condition)
        rounds.check()
        #expect(received(subscription).map(\.kind) == [.synced])
        rounds.uploadTaken()
        rounds.check()
        #expect(received(subscription).isEmpty)
    }

    @Test func syncedOncePerTransitionToUpToDate() {
        let condition = Condition()
        let (rounds, subscription) = rounds(condition)
        rounds.check()
        #expect(received(subscription).isEmpty, "not up to date: nothing")
        condition.upToDate.store(true, ordering: .relaxed)
        rounds.check()
        rounds.check()
        let first = received(subscription)
        #expect(first.map(\.kind) == [.synced], "one per transition, however many looks")
        #expect(first.first?.counts == EventCounts(sent: 0, received: 0, bytesUploaded: 0, bytesDownloaded: 0))
        // A round: a change taken and committed, then idle again.
        rounds.uploadTaken()
        rounds.sent()
        rounds.check()
        rounds.check()
        let second = received(subscription)
        #expect(second.map(\.kind) == [.synced])
        #expect(second.first?.counts?.sent == 1 && second.first?.counts?.received == 0)
        // A look that finds the mount not up to date also ends the transition.
        condition.upToDate.store(false, ordering: .relaxed)
        rounds.check()
        condition.upToDate.store(true, ordering: .relaxed)
        rounds.check()
        #expect(received(subscription).map(\.kind) == [.synced])
        #expect(second.allSatisfy { $0.path == "" && $0.isMountLevel })
    }

    @Test func aScanBeginsWithItsFirstReadAndEndsWithTheFeedsEndWithCounts() {
        let condition = Condition()
        let (rounds, subscription) = rounds(condition)
        rounds.scanNeeded(.attach)
        #expect(received(subscription).isEmpty, "no scan-begin before the feed answers")
        rounds.feedRead(3)
        rounds.received(.added)
        rounds.received(.added)
        rounds.feedRead(2)
        rounds.received(.changed)
        rounds.received(.removed)
        // A failure in the middle does not begin another scan: the one under way goes on.
        rounds.scanNeeded(.catchUp)
        rounds.feedRead(0)
        condition.upToDate.store(true, ordering: .relaxed)
        rounds.feedCaughtUp()
        let events = received(subscription)
        #expect(events.map(\.kind) == [.scanBegin, .scanEnd, .synced], "\(events)")
        #expect(events.first?.message == "attach")
        #expect(events[1].counts == EventCounts(entries: 5, added: 2, changed: 1, removed: 1))
        #expect(events[2].counts?.received == 4)
        // The feed read to its end again, no scan needed: nothing.
        rounds.feedRead(0)
        rounds.feedCaughtUp()
        #expect(received(subscription).isEmpty)
        // After a failure: a catch-up.
        rounds.scanNeeded(.catchUp)
        rounds.feedRead(1)
        rounds.received(.added)
        rounds.feedCaughtUp()
        let catchUp = received(subscription)
        #expect(catchUp.map(\.kind) == [.scanBegin, .scanEnd, .synced])
        #expect(catchUp.first?.message == "catch-up")
        #expect(catchUp[1].counts == EventCounts(entries: 1, added: 1, changed: 0, removed: 0))
    }

    /// The follower marks the feed caught up (so `upToDate` holds) a moment before it ends the
    /// scan: a look from the uploader in between must not publish `synced` before `scan-end`
    /// (failed before, about 1 run in 50: scan-begin, synced, scan-end).
    @Test func noSyncedWhileABegunScanHasNotEnded() {
        let condition = Condition()
        let (rounds, subscription) = rounds(condition)
        rounds.scanNeeded(.attach)
        rounds.feedRead(1)
        rounds.received(.added)
        condition.upToDate.store(true, ordering: .relaxed)
        rounds.check()
        #expect(received(subscription).map(\.kind) == [.scanBegin], "the scan has not ended")
        rounds.feedCaughtUp()
        #expect(received(subscription).map(\.kind) == [.scanEnd, .synced])
    }

    @Test func transitionsCloserThanTheIntervalAreReportedTogetherOnceItIsOver() async throws {
        let condition = Condition()
        condition.upToDate.store(true, ordering: .relaxed)
        let (rounds, subscription) = rounds(condition, interval: .milliseconds(300))
        rounds.check()
        #expect(received(subscription).map(\.kind) == [.synced])
        for _ in 0..<50 {
            rounds.uploadTaken()
            rounds.sent()
            rounds.check()
        }
        #expect(received(subscription).isEmpty, "within the interval: deferred")
        var later: [ChangeEvent] = []
        try await eventually("the deferred synced") {
            later += received(subscription)
            return !later.isEmpty
        }
        #expect(later.map(\.kind) == [.synced] && later.first?.counts?.sent == 50, "\(later)")
        rounds.stop()
        rounds.uploadTaken()
        rounds.check()
        #expect(received(subscription).isEmpty, "stopped: nothing more")
    }

    @Test func syncedIsForWatchersOfFoldersNotOfOneEntry() {
        let synced = ChangeEvent(kind: .synced, path: "", origin: nil, fileID: nil, type: nil)
        let scan = ChangeEvent(kind: .scanBegin, path: "", origin: nil, fileID: nil, type: nil)
        #expect(ChangeFilter.everything.matches(synced) && ChangeFilter(requestPath: "docs/").matches(synced))
        #expect(!ChangeFilter(requestPath: "report.txt").matches(synced))
        #expect(ChangeFilter(requestPath: "report.txt").matches(scan), "a scan goes to every watcher")
    }

    @Test func countsAndConflictDetailsAreObjectsInTheLine() throws {
        let counts = ChangeEvent(
            kind: .scanEnd, path: "", origin: nil, fileID: nil, type: nil,
            counts: EventCounts(entries: 3, added: 1, changed: 1, removed: 1), time: "2026-11-29T17:00:00.000Z")
        #expect(
            String(decoding: counts.jsonLine, as: UTF8.self)
                == #"{"time":"2026-11-29T17:00:00.000Z","kind":"scan-end","path":"","#
                + #""counts":{"added":1,"changed":1,"entries":3,"removed":1}}"# + "\n")
        let conflict = ChangeEvent(
            kind: .conflict, path: "a/b.txt", origin: .local, fileID: nil, type: .file,
            conflict: ConflictDetails(
                copy: "a/b (conflict from x).txt", copyFileID: "00", host: "x", reason: "r \"q\"",
                local: ConflictVersion(size: 2), remote: ConflictVersion(version: 7), base: ConflictVersion(version: 5))
        )
        let decoded = try JSONDecoder().decode(ChangeEvent.self, from: Data(conflict.jsonLine))
        #expect(decoded.conflict == conflict.conflict && decoded.path == "a/b.txt")
    }
}

/// `scan-…` and `synced` from real engines (two folders through one container, no FUSE).
extension SyncEngineTests {
    /// Events of `kinds` only.
    private func only(_ kinds: Set<ChangeEvent.Kind>, _ events: [ChangeEvent]) -> [ChangeEvent] {
        events.filter { kinds.contains($0.kind) }
    }

    @Test func aFirstAttachIsAScanOfWhatTheContainerHoldsThenSynced() async throws {
        let pair = try SyncedPair()
        for name in ["a.txt", "b.txt", "c.txt"] { _ = try pair.a.makeFile(name, contents: bytes(name)) }
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        let fresh = try FileSystemFixture(uploadPolicy: SyncedPair.fastPolicy)
        let subscription = fresh.fs.changeEvents.subscribe(.everything)
        let engine = SyncedPair.engine(fresh, pair.container)
        engine.start()
        defer { engine.stop() }
        var seen: [ChangeEvent] = []
        try await eventually("scan-end and synced") {
            seen += only([.scanBegin, .scanEnd, .synced], received(subscription))
            return seen.count >= 3
        }
        try #require(seen.map(\.kind) == [.scanBegin, .scanEnd, .synced], "\(seen)")
        #expect(seen[0].message == "attach")
        #expect(seen[1].counts?.added == 3, "the three files are new here: \(seen[1])")
        #expect((seen[1].counts?.entries ?? 0) >= 3 && seen[1].counts?.removed == 0)
        #expect(seen[2].counts?.received == seen[1].counts.map { $0.added! + $0.changed! + $0.removed! })
        #expect(engine.status().upToDate == true)
    }

    @Test func aCatchUpAfterAnOutageIsAScanWithWhatChangedMeanwhile() async throws {
        let base = InMemoryContainer()
        let faulty = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: faulty)
        _ = try pair.a.makeFile("kept.txt", contents: bytes("1"))
        _ = try pair.a.makeFile("gone.txt", contents: bytes("2"))
        pair.a.fs.outbox.expediteAll()
        try await eventually("both on B") { try pair.b.childNames() == ["gone.txt", "kept.txt"] }
        // B's round that received them ends (its `synced` counts them) before the outage, so the
        // catch-up's round counts only what changed meanwhile.
        try await eventually("B's synced published") { pair.engineB.rounds.publishedUpToDate }
        let subscription = pair.b.fs.changeEvents.subscribe(.everything)
        faulty.startOutage()
        try await eventually("B offline") { !pair.engineB.isOnline }
        _ = try pair.a.makeFile("new.txt", contents: bytes("3"))
        try pair.a.fs.unlink(parent: .root, name: FileName("gone.txt"))
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        #expect(only([.scanBegin, .scanEnd], received(subscription)).isEmpty, "no scan while the feed fails")
        faulty.endOutage()
        var seen: [ChangeEvent] = []
        try await eventually("the catch-up's scan-end and synced") {
            seen += only([.scanBegin, .scanEnd, .synced], received(subscription))
            return seen.contains { $0.kind == .synced }
        }
        #expect(seen.map(\.kind) == [.scanBegin, .scanEnd, .synced], "\(seen)")
        #expect(seen[0].message == "catch-up")
        #expect(seen[1].counts?.added == 1 && seen[1].counts?.removed == 1, "\(seen[1])")
        #expect(seen[2].counts?.received == 2 && seen[2].counts?.sent == 0, "\(seen[2])")
        #expect(try pair.b.childNames() == ["kept.txt", "new.txt"])
    }

    @Test func anEditIsSyncedOnBothSidesWithWhatWasSentAndReceived() async throws {
        let pair = try SyncedPair()
        // Up to date, and the `synced` of the start published (not deferred by the interval):
        // otherwise a watcher subscribing now sees that one first, with nothing sent or received.
        try await eventually("both up to date, and told so") {
            pair.engineA.rounds.publishedUpToDate && pair.engineB.rounds.publishedUpToDate
        }
        let onA = pair.a.fs.changeEvents.subscribe(.everything)
        let onB = pair.b.fs.changeEvents.subscribe(.everything)
        _ = try pair.a.makeFile("edit.txt", contents: bytes("hello"))
        var syncedA: [ChangeEvent] = []
        var syncedB: [ChangeEvent] = []
        try await eventually("synced on A and on B") {
            syncedA += only([.synced], received(onA))
            syncedB += only([.synced], received(onB))
            return try !syncedA.isEmpty && !syncedB.isEmpty && pair.b.childNames() == ["edit.txt"]
        }
        #expect(syncedA.first?.counts?.sent == 1 && syncedA.first?.counts?.bytesUploaded == 5, "\(syncedA)")
        #expect(syncedB.first?.counts?.received == 1 && syncedB.first?.counts?.sent == 0, "\(syncedB)")
    }

    @Test func aKeptConflictCopyIsAnEventWithBothVersionsAndTheBase() async throws {
        let slow = UploadQueue.Policy(quietDelay: 400_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: slow)
        _ = try pair.a.makeFile("shared.bin", contents: [0, 1, 2])
        pair.a.fs.outbox.expediteAll()
        try await eventually("shared on B") { try pair.b.childNames() == ["shared.bin"] }
        try await pair.settle()
        let onA = pair.a.fs.changeEvents.subscribe(.everything)
        let onB = pair.b.fs.changeEvents.subscribe(.everything)
        for (fixture, bytes) in [(pair.a, [0, 9, 9, 9] as [UInt8]), (pair.b, [0, 7, 7])] {
            let handle = try fixture.fs.open(
                try fixture.lookupIno("shared.bin"), flags: O_RDWR | O_TRUNC, caller: testCaller)
            try fixture.write(handle, bytes, at: 0)
            fixture.fs.fileIO.release(handle)
        }
        pair.a.fs.outbox.expediteAll()
        pair.b.fs.outbox.expediteAll()
        var conflicts: [(ChangeEvent, FileSystemFixture)] = []
        try await eventually("a conflict event on each side") {
            conflicts += only([.conflict], received(onA)).map { ($0, pair.a) }
            conflicts += only([.conflict], received(onB)).map { ($0, pair.b) }
            return conflicts.count >= 2
        }
        // One side keeps the copy (origin local); the other sees it arrive (origin remote).
        #expect(conflicts.count == 2 && Set(conflicts.map { $0.0.origin }) == [.local, .remote], "\(conflicts)")
        let (event, side) = try #require(conflicts.first { $0.0.origin == .local })
        let details = try #require(event.conflict)
        let ownSize: Int64 = side === pair.a ? 4 : 3
        #expect(event.path == "shared.bin" && event.origin == .local && event.type == .file)
        #expect(details.copy.hasPrefix("shared (conflict from ") && details.local?.path == details.copy)
        #expect(details.local?.size == ownSize && details.local?.version == nil, "not committed yet")
        #expect(details.remote?.path == "shared.bin" && details.remote?.size == 7 - ownSize)
        #expect(details.remote?.fileID == event.fileID && details.remote?.device?.isEmpty == false)
        let remoteVersion = try #require(details.remote?.version)
        let baseVersion = try #require(details.base?.version)
        #expect(baseVersion < remoteVersion)
        #expect(details.host == side.fs.deviceName.text && details.markers == nil)
        let arrived = try #require(conflicts.first { $0.0.origin == .remote }?.0.conflict)
        #expect(arrived.copy == details.copy && arrived.host == details.host, "\(arrived)")
        #expect(arrived.local?.path == "shared.bin" && arrived.local?.size == 7 - ownSize, "this side's version")
        #expect(
            arrived.remote?.path == details.copy && arrived.remote?.size == ownSize && arrived.remote?.version != nil)
    }

    @Test func aBurstOfTenThousandCreatesGivesAFewSyncedNotThousands() async throws {
        let pair = try SyncedPair(guardsDeletes: false)
        try await eventually("both up to date") {
            pair.engineA.status().upToDate == true && pair.engineB.status().upToDate == true
        }
        let onA = pair.a.fs.changeEvents.subscribe(.everything, limit: 100_000)
        let onB = pair.b.fs.changeEvents.subscribe(.everything, limit: 100_000)
        let started = ContinuousClock.now
        let folder = try pair.a.mkdir("burst")
        for index in 0..<10_000 { _ = try pair.a.makeFile("f\(index)", in: folder, contents: []) }
        var syncedA: [ChangeEvent] = []
        var syncedB: [ChangeEvent] = []
        try await eventually("everything sent and received", timeout: 300) {
            syncedA += only([.synced], received(onA))
            syncedB += only([.synced], received(onB))
            // The folder and its files (a change committed twice would count twice).
            return syncedA.reduce(0) { $0 + ($1.counts?.sent ?? 0) } >= 10_001
                && syncedB.reduce(0) { $0 + ($1.counts?.received ?? 0) } >= 10_001
        }
        let seconds = Int((ContinuousClock.now - started).inSeconds.rounded(.up))
        // At most one a second (`SyncRounds.minimumInterval`), and one more at the end.
        #expect(
            syncedA.count <= seconds + 1 && syncedB.count <= seconds + 1,
            "A \(syncedA.count), B \(syncedB.count) in \(seconds) s")
    }
}
