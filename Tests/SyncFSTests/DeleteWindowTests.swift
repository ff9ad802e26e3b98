import Foundation
import SyncBackend
import Testing

@testable import SyncFS

@Suite("DeleteWindow: the mass-delete guard's counting (manual clock)")
struct DeleteWindowTests {
    /// 6 changes (or 3 rewrites), or 30 % of the tree and at least 4, within 60 units; no change
    /// goes at once, each after a pause of 10.
    let thresholds = Self.thresholds()

    static func thresholds(
        changes: Int = 6, rewrites: Int = 3, fraction: Double = 0.3, minimum: Int = 4, prompt: Int = 0
    ) -> DeleteWindow.Thresholds {
        DeleteWindow.Thresholds(
            changes: changes, rewrites: rewrites, fraction: fraction, minimumForFraction: minimum, window: 60,
            settle: 10, prompt: prompt, establishedAge: 0)
    }
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
        let wide = Self.thresholds(changes: 100, fraction: 1, minimum: 100)
        var window = DeleteWindow(thresholds: wide)
        // One every 5 units never pauses for 10: the first still goes once it waited a window.
        for step in 0..<12 { _ = window.consider(ids[step], now: Int64(step) * 5, treeSize: 1000) }
        #expect(window.consider(ids[0], now: 59, treeSize: 1000) != .go)
        #expect(window.consider(ids[0], now: 60, treeSize: 1000) == .go)
    }

    @Test func theFractionTripsOnlyFromTheMinimumOn() {
        func trips(_ thresholds: DeleteWindow.Thresholds, _ count: Int, rewrites: Int = 0, of tree: Int) -> Bool {
            thresholds.exceeded(count: count, rewrites: rewrites, treeSize: tree)
        }
        #expect(!trips(thresholds, 2, of: 3), "2 of 3 files is not a mass deletion")
        #expect(!trips(thresholds, 3, of: 3))
        #expect(trips(thresholds, 4, of: 10), "4 of 10 is more than 30 %, and 4 is the minimum")
        #expect(!trips(thresholds, 3, of: 1000))
        #expect(trips(thresholds, 6, of: 1_000_000), "6 trips whatever the tree")
        #expect(!trips(thresholds, 5, rewrites: 2, of: 1_000_000))
        #expect(trips(thresholds, 3, rewrites: 3, of: 1_000_000), "3 rewrites trip on their own")
        let standard = DeleteWindow.Thresholds.standard
        #expect(trips(standard, 1000, of: 1_000_000), "rm -rf of 1,000 established files")
        #expect(!trips(standard, 999, of: 1_000_000))
        #expect(!trips(standard, 49, of: 60))
        #expect(trips(standard, 60, of: 200), "30 % of an established tree of 200 files")
        #expect(!trips(standard, 59, of: 200))
        #expect(trips(standard, 100, rewrites: 100, of: 1_000_000), "100 files rewritten with random bytes")
        #expect(!trips(standard, 99, rewrites: 99, of: 1_000_000))
    }

    /// A single edit or delete never waits: up to `prompt` guarded changes within one `settle`
    /// go at once; a faster burst must pause, so it is still held whole before it trips.
    @Test func changesAtAPersonsPaceGoAtOnceAndABurstIsStillCaught() {
        var window = DeleteWindow(thresholds: Self.thresholds(prompt: 3))
        for id in ids.prefix(3) {
            #expect(window.consider(id, now: 0, treeSize: 1000) == .go)
            window.admit(id)
            window.finished(id)
        }
        #expect(window.consider(ids[3], now: 1, treeSize: 1000) == .wait(until: 11), "a fourth within 10")
        #expect(window.consider(ids[4], now: 2, treeSize: 1000) == .wait(until: 12))
        #expect(window.consider(ids[5], now: 3, treeSize: 1000) == .held, "6 within the window trip it")
        #expect(window.tripped)
    }

    @Test func aSteadyStreamAtAPersonsPaceGoesAtOnceUntilTheWindowHoldsTooMany() {
        var window = DeleteWindow(thresholds: Self.thresholds(prompt: 3))
        // One every 4: never more than 3 within 10.
        for (index, id) in ids.prefix(5).enumerated() {
            #expect(window.consider(id, now: Int64(index) * 4, treeSize: 1000) == .go)
            window.admit(id)
            window.finished(id)
        }
        #expect(window.consider(ids[5], now: 20, treeSize: 1000) == .held, "the sixth within the window")
    }

    @Test func rewritesTripOnTheirOwnThreshold() {
        var window = DeleteWindow(thresholds: thresholds)
        #expect(window.consider(ids[0], isRewrite: true, now: 0, treeSize: 1000) != .held)
        #expect(window.consider(ids[1], now: 0, treeSize: 1000) != .held)
        #expect(window.consider(ids[2], isRewrite: true, now: 0, treeSize: 1000) != .held)
        #expect(window.consider(ids[3], isRewrite: true, now: 0, treeSize: 1000) == .held, "the third rewrite")
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
        let sent = [
            SentChange(id: ids[2], replaced: 41, isRewrite: false),
            SentChange(id: ids[3], replaced: 7, isRewrite: true),
        ]
        let hold = GuardHold(
            since: Date(timeIntervalSince1970: 1_764_000_000), changes: 1234, rewrites: rewrites, lastSeq: 77,
            sent: sent)
        #expect(GuardHold(text: hold.text) == hold)
        // A hold recorded before the sent changes were kept reads as one without them.
        let older = GuardHold(text: "1764000000;3;;9")
        #expect(older.changes == 3 && older.lastSeq == 9 && older.sent.isEmpty)
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
        options = GuardThresholds()
        options.rewrites = 0
        #expect(options.problem != nil)
        options = GuardThresholds()
        options.ageSeconds = -1
        #expect(options.problem != nil)
        options.ageSeconds = 0
        #expect(options.problem == nil && options.window.establishedAge == 0)
    }
}
