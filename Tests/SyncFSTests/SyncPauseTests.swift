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
        // It still waits after the main thread had time to see it go.
        #expect(!waitUntil(timeout: 0.3) { waiter.hasEnded }, "a paused thread waits")
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
        pause.pause(PauseState(until: Date().addingTimeInterval(0.5), scope: .all))
        #expect(pause.holds(.all) && pause.holds(.sync))
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
        #expect(!pause.waitWhilePaused(.sync), "stopped: no wait")
        #expect(pause.current != nil, "stopping is not resuming: the pause stays recorded")
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

    @Test func anUnreadableStoredPauseIsAPauseWithoutEnd() throws {
        for text in ["garbage", "12x;sync", "never;everything", "never", ";", "never;sync;more"] {
            #expect(PauseState(text: text) == PauseState(until: nil, scope: .sync), "\(text)")
        }
    }
}
