import Foundation
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// The pause of a mount's engine (`SyncPause`; doc/SEMANTICS.md, "Pausing a mount"): what it
/// records and announces, that a waiting thread sleeps until resume, the pause's end or stop,
/// and that a recorded pause comes back after a restart — ended if its time passed meanwhile.
@Suite struct SyncPauseTests {
    /// What a pause recorded and announced, in order.
    final class Trail: Sendable {
        let recorded = Mutex<[PauseState?]>([])
        let announced = Mutex<[SyncPause.Change]>([])

        func make(restoring: PauseState? = nil) -> SyncPause {
            SyncPause(
                restoring: restoring, record: { state in self.recorded.withLock { $0.append(state) } },
                announce: { change in self.announced.withLock { $0.append(change) } })
        }

        var changes: [SyncPause.Change] { announced.withLock { $0 } }
        var lastRecorded: PauseState?? { recorded.withLock { $0.last } }
    }

    /// Runs `body` on a thread of its own; `ended` says whether it returned.
    final class Waiter: Sendable {
        let ended = Atomic<Bool>(false)
        let waited = Atomic<Bool>(false)

        init(_ body: @escaping @Sendable () -> Bool) {
            Thread.detachNewThread { [self] in
                waited.store(body(), ordering: .releasing)
                ended.store(true, ordering: .releasing)
            }
        }

        var hasEnded: Bool { ended.load(ordering: .acquiring) }
        /// What `body` returned (read after `hasEnded`).
        var didWait: Bool { waited.load(ordering: .acquiring) }
    }

    @Test func aPausedThreadWaitsUntilResumeAndAnUnpausedOneGoesOn() throws {
        let trail = Trail()
        let pause = trail.make()
        #expect(!pause.waitWhilePaused(.sync), "not paused: no wait")
        pause.pause(PauseState(until: nil, scope: .sync))
        #expect(trail.changes == [.paused(PauseState(until: nil, scope: .sync))])
        #expect(trail.lastRecorded == .some(PauseState(until: nil, scope: .sync)))
        #expect(!pause.waitWhilePaused(.all), "downloads go on while only uploads and the feed are paused")
        let waiter = Waiter { pause.waitWhilePaused(.sync) }
        #expect(waitUntil { pause.sleepingThreads == 1 }, "a paused thread sleeps")
        #expect(!waiter.hasEnded)
        #expect(pause.resume())
        #expect(waitUntil { waiter.hasEnded } && waiter.waited.load(ordering: .acquiring))
        #expect(trail.changes.last == .resumed(expired: false))
        #expect(trail.lastRecorded == .some(nil), "the resume is recorded as no pause")
        #expect(!pause.resume(), "resuming an unpaused mount announces nothing")
        #expect(trail.changes.count == 2)
    }

    @Test func aPauseWithAnEndResumesByItselfAndSaysSoOnce() throws {
        let trail = Trail()
        let pause = trail.make()
        // What it holds, on a pause whose end the test cannot reach.
        pause.pause(PauseState(until: Date().addingTimeInterval(3600), scope: .all))
        #expect(pause.holds(.all) && pause.holds(.sync))
        pause.pause(PauseState(until: Date().addingTimeInterval(0.5), scope: .all))
        let uploader = Waiter { pause.waitWhilePaused(.sync) }
        let downloader = Waiter { pause.waitWhilePaused(.all) }
        #expect(waitUntil(timeout: 10) { uploader.hasEnded && downloader.hasEnded }, "both woke at the pause's end")
        #expect(pause.current == nil)
        #expect(trail.changes.filter { $0 == .resumed(expired: true) }.count == 1, "\(trail.changes)")
        #expect(trail.lastRecorded == .some(nil))
    }

    @Test func stopEndsEveryWaitAndLaterOnesReturnAtOnce() throws {
        let pause = Trail().make()
        pause.pause(PauseState(until: nil, scope: .sync))
        let waiter = Waiter { pause.waitWhilePaused(.sync) }
        pause.stop()
        #expect(waitUntil { waiter.hasEnded })
        #expect(waiter.didWait, "woken by stop: the caller does not transfer")
        #expect(pause.waitWhilePaused(.sync), "stopped: no wait, and no transfer either")
        #expect(pause.current != nil, "stopping is not resuming: the pause stays recorded")
        let unpaused = Trail().make()
        unpaused.stop()
        #expect(unpaused.waitWhilePaused(.all), "stopped, even unpaused: no transfer")
    }

    /// A resumed downloader must find its source restored: waiting threads wake only after the
    /// observers rewired the engine.
    @Test func waitersWakeOnlyAfterTheObserversRan() throws {
        let pause = Trail().make()
        pause.pause(PauseState(until: nil, scope: .all))
        let waiter = Waiter { pause.waitWhilePaused(.all) }
        #expect(waitUntil { pause.sleepingThreads == 1 })
        let wokeEarly = Mutex<Bool?>(nil)
        pause.observe { state in
            guard state == nil else { return }
            // A waiter woken before the observers would end within this second.
            let ended = waitUntil(timeout: 1) { waiter.hasEnded }
            wokeEarly.withLock { $0 = ended }
        }
        #expect(pause.resume())
        let early = wokeEarly.withLock { $0 }
        #expect(early == false, "a waiter ran before the observers were done")
        #expect(waitUntil { waiter.hasEnded } && waiter.waited.load(ordering: .acquiring))
    }

    @Test func observersSeeEveryChangeWithTheNewState() throws {
        let pause = Trail().make()
        let seen = Mutex<[PauseState?]>([])
        pause.observe { state in seen.withLock { $0.append(state) } }
        pause.pause(PauseState(until: nil, scope: .all))
        pause.pause(PauseState(until: nil, scope: .sync))
        pause.resume()
        #expect(
            seen.withLock { $0 } == [PauseState(until: nil, scope: .all), PauseState(until: nil, scope: .sync), nil])
    }

    @Test func theStoredTextComesBackAsThePauseAfterARestart() throws {
        let until = Date(timeIntervalSince1970: 4_102_444_800.25)  // 2100-01-01
        for state in [PauseState(until: until, scope: .sync), PauseState(until: nil, scope: .all)] {
            let text = StateFact.paused.encode(state)
            #expect(StateFact.paused.decode(text) == state, "\(text)")
            let trail = Trail()
            let restored = trail.make(restoring: StateFacts(["paused": text])[.paused])
            #expect(restored.current == state)
            #expect(trail.changes.isEmpty, "a restored pause is not announced again")
        }
        #expect(StateFact.paused.encode(PauseState(until: nil, scope: .sync)) == "never;sync")
        #expect(StateFacts(["paused": ""])[.paused] == nil, "cleared: not paused")
    }

    @Test func aPauseWhoseEndPassedWhileUnmountedEndsAtTheNextMount() throws {
        let trail = Trail()
        let pause = trail.make(restoring: PauseState(until: Date().addingTimeInterval(-60), scope: .sync))
        #expect(pause.current == nil)
        #expect(trail.changes == [.resumed(expired: true)])
        #expect(trail.lastRecorded == .some(nil))
    }

    /// `NSCondition.wait(until:)` traps on a date that is not a number: a stored end that is
    /// none (`nan`, `inf`) is read as no end; a huge one waits (a day at a time) or has passed.
    @Test func aStoredEndThatIsNoFiniteNumberIsAPauseWithoutEnd() throws {
        for text in ["nan;sync", "nan;all", "inf;all", "-inf;sync", "+inf;sync", "infinity;sync", "-nan;all"] {
            #expect(PauseState(text: text) == PauseState(until: nil, scope: .sync), "\(text)")
        }
        for text in ["nan;sync", "inf;all", "1e308;sync", "1.7976931348623157e308;all"] {
            let pause = Trail().make(restoring: PauseState(text: text))
            let waiter = Waiter { pause.waitWhilePaused(.sync) }
            #expect(waitUntil { pause.sleepingThreads == 1 }, "\(text): a paused thread sleeps")
            #expect(pause.resume())
            #expect(waitUntil { waiter.hasEnded }, "\(text)")
        }
        let trail = Trail()
        let passed = trail.make(restoring: PauseState(text: "-1e308;sync"))
        #expect(passed.current == nil && trail.changes == [.resumed(expired: true)])
        #expect(!passed.waitWhilePaused(.sync))
    }

    @Test func anUnreadableStoredPauseIsAPauseWithoutEnd() throws {
        for text in ["garbage", "12x;sync", "never;everything", "never", ";", "never;sync;more"] {
            #expect(PauseState(text: text) == PauseState(until: nil, scope: .sync), "\(text)")
        }
    }
}
