import Foundation
import SyncBackend
import Testing

@testable import SyncFS

@Suite("DeleteWindow: the mass-delete guard's counting (manual clock)")
struct DeleteWindowTests {
    /// More than 5 changes, or more than 30 % of the tree and at least 4, within 60 units; a
    /// change goes after a pause of 10.
    let thresholds = DeleteWindow.Thresholds(changes: 5, fraction: 0.3, minimumForFraction: 4, window: 60, settle: 10)
    let ids = (0..<20).map { _ in FileID.random() }

    @Test func aBurstOverTheThresholdTripsBeforeAnyOfItGoes() {
        var window = DeleteWindow(thresholds: thresholds)
        for (index, id) in ids.prefix(5).enumerated() {
            #expect(window.consider(id, now: Int64(index), treeSize: 1000) == .wait(until: Int64(index) + 10))
        }
        #expect(window.consider(ids[5], now: 5, treeSize: 1000) == .held)
        #expect(window.tripped)
        // Nothing of the burst goes, however long it waits.
        #expect(window.consider(ids[0], now: 10_000, treeSize: 1000) == .held)
        #expect(window.pending.count == 6)
    }

    /// A file saved over and over (an autosave, a log) is one entry, however many times it is
    /// rewritten within the window: it never trips the guard on its own (FailoverMountTest wrote
    /// one file every second and tripped the fraction rule of a small tree after 50 s).
    @Test func oneFileRewrittenManyTimesCountsOnce() {
        var window = DeleteWindow(thresholds: thresholds)
        var now: Int64 = 0
        for _ in 0..<100 {
            var verdict = window.consider(ids[0], now: now, treeSize: 3)
            while case .wait(let until) = verdict {
                now = until
                verdict = window.consider(ids[0], now: now, treeSize: 3)
            }
            #expect(verdict == .go, "rewrite at \(now)")
            window.admit(ids[0])
            window.finished(ids[0])
            now += 1
        }
        #expect(!window.tripped)
        #expect(window.count(now: now) == 1)
        // Distinct entries still count: five more within the window trip it.
        for id in ids[1..<6] { _ = window.consider(id, now: now, treeSize: 1000) }
        #expect(window.tripped)
    }

    @Test func aChangeGoesOnceTheStreamPaused() {
        var window = DeleteWindow(thresholds: thresholds)
        #expect(window.consider(ids[0], now: 0, treeSize: 1000) == .wait(until: 10))
        #expect(window.consider(ids[1], now: 4, treeSize: 1000) == .wait(until: 14))
        #expect(window.consider(ids[0], now: 10, treeSize: 1000) == .wait(until: 14), "another came at 4")
        #expect(window.consider(ids[0], now: 14, treeSize: 1000) == .go)
        #expect(window.consider(ids[1], now: 14, treeSize: 1000) == .go)
        window.finished(ids[0])
        window.finished(ids[1])
        #expect(!window.tripped)
        // They still count within the window: four more trip it (2 + 4 > 5).
        for id in ids[2..<5] { _ = window.consider(id, now: 20, treeSize: 1000) }
        #expect(window.consider(ids[5], now: 21, treeSize: 1000) == .held)
    }

    @Test func aSlowStreamGoesOneByOneUntilTheWindowHoldsTooMany() {
        var window = DeleteWindow(thresholds: thresholds)
        var went = 0
        for (index, id) in ids.prefix(8).enumerated() {
            let time = Int64(index) * 11
            switch window.consider(id, now: time, treeSize: 1000) {
            case .go: Issue.record("a change never goes at once")
            case .held: break
            case .wait(let until):
                #expect(window.consider(id, now: until, treeSize: 1000) == .go)
                window.finished(id)
                went += 1
            }
        }
        // At most the threshold reaches the container within any window.
        #expect(went == 5)
        #expect(window.tripped)
    }

    @Test func theCountSlidesOut() {
        var window = DeleteWindow(thresholds: thresholds)
        for id in ids.prefix(5) { _ = window.consider(id, now: 0, treeSize: 1000) }
        for id in ids.prefix(5) {
            #expect(window.consider(id, now: 10, treeSize: 1000) == .go)
            window.finished(id)
        }
        #expect(window.count(now: 59) == 5)
        #expect(window.count(now: 60) == 0, "the window is (now - 60, now]")
        for id in ids[5..<10] { _ = window.consider(id, now: 61, treeSize: 1000) }
        #expect(!window.tripped, "five in a fresh window is not more than five")
    }

    @Test func aContinuousTrickleBelowTheThresholdStillGoesWithinAWindow() {
        let wide = DeleteWindow.Thresholds(changes: 100, fraction: 1, minimumForFraction: 100, window: 60, settle: 10)
        var window = DeleteWindow(thresholds: wide)
        // One every 5 units never pauses for 10: the first still goes once it waited a window.
        for step in 0..<12 { _ = window.consider(ids[step], now: Int64(step) * 5, treeSize: 1000) }
        #expect(window.consider(ids[0], now: 59, treeSize: 1000) != .go)
        #expect(window.consider(ids[0], now: 60, treeSize: 1000) == .go)
    }

    @Test func theFractionTripsOnlyFromTheMinimumOn() {
        #expect(!thresholds.exceeded(count: 2, treeSize: 3), "2 of 3 files is not a mass deletion")
        #expect(!thresholds.exceeded(count: 3, treeSize: 3))
        #expect(thresholds.exceeded(count: 4, treeSize: 10), "4 of 10 is more than 30 %, and 4 is the minimum")
        #expect(!thresholds.exceeded(count: 3, treeSize: 1000))
        #expect(thresholds.exceeded(count: 6, treeSize: 1_000_000), "more than 5 trips whatever the tree")
        #expect(DeleteWindow.Thresholds.standard.exceeded(count: 1001, treeSize: 1_000_000))
        #expect(!DeleteWindow.Thresholds.standard.exceeded(count: 1000, treeSize: 1_000_000))
        #expect(!DeleteWindow.Thresholds.standard.exceeded(count: 49, treeSize: 60))
        #expect(DeleteWindow.Thresholds.standard.exceeded(count: 50, treeSize: 100))
    }

    @Test func theFractionTripsTheWindow() {
        var window = DeleteWindow(thresholds: thresholds)
        for id in ids.prefix(3) { #expect(window.consider(id, now: 0, treeSize: 10) != .held) }
        #expect(window.consider(ids[3], now: 0, treeSize: 10) == .held)
    }

    @Test func releasedChangesGoAndAreNotCountedAgain() {
        var window = DeleteWindow(thresholds: thresholds)
        for id in ids.prefix(6) { _ = window.consider(id, now: 0, treeSize: 1000) }
        #expect(window.tripped)
        // After a restart some held changes were never considered: `alsoReleased` names them.
        let unseen = ids[10]
        window.release(alsoReleased: [unseen])
        #expect(!window.tripped)
        for id in ids.prefix(6) + [unseen] {
            #expect(window.consider(id, now: 1, treeSize: 1000) == .go)
            window.finished(id)
        }
        #expect(window.count(now: 1) == 0)
        // Later changes are counted afresh: released ones do not go on counting.
        #expect(window.consider(ids[0], now: 2, treeSize: 1000) == .wait(until: 12))
    }

    @Test func anAdmittedChangeNoLongerWaitsAndGoesOnGoing() {
        var window = DeleteWindow(thresholds: thresholds)
        _ = window.consider(ids[0], now: 0, treeSize: 1000)
        _ = window.consider(ids[1], now: 0, treeSize: 1000)
        #expect(window.consider(ids[0], now: 10, treeSize: 1000) == .go)
        window.admit(ids[0])
        #expect(!window.isWaiting(ids[0]), "a directory delete let go does not wait for the others")
        #expect(window.isWaiting(ids[1]))
        #expect(window.isKnown(ids[0]))
        // A conflict round later: it still goes, even with new deletions streaming in.
        _ = window.consider(ids[2], now: 11, treeSize: 1000)
        #expect(window.consider(ids[0], now: 11, treeSize: 1000) == .go)
        window.finished(ids[0])
        #expect(!window.isKnown(ids[0]))
    }

    @Test func discardWatchesAfresh() {
        var window = DeleteWindow(thresholds: thresholds)
        for id in ids.prefix(6) { _ = window.consider(id, now: 0, treeSize: 1000) }
        window.discard()
        #expect(!window.tripped)
        #expect(window.pending.isEmpty)
        #expect(window.consider(ids[7], now: 1, treeSize: 1000) == .wait(until: 11))
    }

    @Test func aRestoredHoldHoldsEverything() {
        var window = DeleteWindow(thresholds: thresholds, tripped: true)
        #expect(window.consider(ids[0], now: 0, treeSize: 1000) == .held)
    }

    @Test func theHoldReadsBackAndADamagedOneStillHolds() {
        let rewrites: Set<FileID> = [ids[0], ids[1]]
        let hold = GuardHold(
            since: Date(timeIntervalSince1970: 1_764_000_000), changes: 1234, rewrites: rewrites, lastSeq: 77)
        #expect(GuardHold(text: hold.text) == hold)
        let damaged = GuardHold(text: "garbage")
        #expect(damaged.changes == 0 && damaged.rewrites.isEmpty)
        #expect(StateFact.guardHold.decode("garbage") != nil, "any non-empty text is a hold")
    }

    @Test func theMountOptionsAreChecked() {
        var options = GuardThresholds()
        #expect(options.problem == nil)
        #expect(options.window == DeleteWindow.Thresholds.standard)
        options.percent = 0
        #expect(options.problem != nil)
        options = GuardThresholds()
        options.deletes = 0
        #expect(options.problem != nil)
        options = GuardThresholds()
        options.windowSeconds = 0.5
        #expect(options.problem != nil)
        options.windowSeconds = 1
        #expect(options.window.settle == options.window.window, "the pause is never longer than the window")
    }
}
