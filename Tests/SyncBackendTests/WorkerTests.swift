import Foundation
import Synchronization
import Testing

@testable import SyncBackend

/// `Worker` and `WorkerGroup`: a stop signals, a join waits for the body on a condition, and a
/// join that runs out of time says so.
@Suite struct WorkerTests {
    /// A gate a test opens (a body waits on it).
    final class Gate: Sendable {
        private let opened = Mutex(false)
        private let condition = NSCondition()
        func open() {
            condition.lock()
            opened.withLock { $0 = true }
            condition.broadcast()
            condition.unlock()
        }
        func wait() {
            condition.lock()
            while !opened.withLock({ $0 }) { condition.wait() }
            condition.unlock()
        }
    }

    @Test func stopEndsASleepingWorkerAndJoinWaitsForIt() {
        let rounds = Atomic(0)
        let worker = Worker.start("test-sleeper") { worker in
            while worker.sleep(for: .seconds(60)) { rounds.add(1, ordering: .relaxed) }
        }
        let started = Date()
        let unfinished = Worker.stop([worker], within: .seconds(30))
        #expect(unfinished.isEmpty)
        #expect(worker.hasEnded && worker.isStopping)
        #expect(rounds.load(ordering: .relaxed) == 0, "the sleep returned false at once")
        #expect(Date().timeIntervalSince(started) < 20, "the stop interrupted the 60 s sleep")
    }

    @Test func aWorkerThatEndsOnItsOwnIsJoinedWithoutAStop() {
        let ran = Atomic(false)
        let worker = Worker.start("test-short") { _ in ran.store(true, ordering: .relaxed) }
        #expect(worker.join(within: .seconds(30)))
        #expect(ran.load(ordering: .relaxed) && worker.hasEnded && !worker.isStopping)
    }

    @Test func aJoinThatRunsOutOfTimeReportsTheWorker() {
        let gate = Gate()
        let worker = Worker.start("test-stuck") { _ in gate.wait() }
        // The body ignores stops: the join ends at its deadline and names the worker.
        #expect(Worker.stop([worker], within: .milliseconds(50)) == ["test-stuck"])
        #expect(!worker.hasEnded)
        gate.open()
        #expect(worker.join(within: .seconds(30)))
    }

    @Test func stopRunsWakeOnceForABodyBlockedElsewhere() {
        let gate = Gate()
        let wakes = Atomic(0)
        let worker = Worker.start(
            "test-blocked",
            wake: {
                wakes.add(1, ordering: .relaxed)
                gate.open()
            },
            body: { _ in gate.wait() })
        worker.stop()
        worker.stop()
        #expect(worker.join(within: .seconds(30)))
        #expect(wakes.load(ordering: .relaxed) == 1)
    }

    @Test func severalWorkersShareOneDeadline() {
        let gate = Gate()
        let stuck = (1...3).map { index in Worker.start("test-stuck-\(index)") { _ in gate.wait() } }
        let started = Date()
        let unfinished = Worker.stop(stuck, within: .seconds(1))
        #expect(unfinished.count == 3)
        // One shared deadline, not one per worker (3 x 1 s); generous for a loaded machine.
        #expect(Date().timeIntervalSince(started) < 2.5)
        gate.open()
        #expect(Worker.stop(stuck, within: .seconds(30)).isEmpty)
    }

    @Test func joinsWithoutADeadlineWaitForTheBody() {
        let gate = Gate()
        let first = Worker.start("test-far") { _ in gate.wait() }
        let second = Worker.start("test-far") { _ in gate.wait() }
        gate.open()
        // A deadline as far as `distantFuture` (which `NSCondition.wait(until:)` cannot take).
        #expect(first.join(until: .distantFuture))
        second.join()
        #expect(first.hasEnded && second.hasEnded)
    }

    @Test func aNeverStartedWorkerCountsAsEnded() {
        let worker = Worker("test-idle")
        #expect(worker.join(within: .milliseconds(1)))
    }

    @Test func aGroupJoinsItsWorkersAndForgetsThoseThatEnded() {
        let group = WorkerGroup()
        let gate = Gate()
        for index in 1...4 {
            group.start("test-job-\(index)") { _ in gate.wait() }
        }
        #expect(group.count == 4)
        #expect(!group.join(within: .milliseconds(20)), "none of them may end yet")
        gate.open()
        #expect(group.join(within: .seconds(30)))
        #expect(group.count == 0)
    }

    @Test func aGroupStopReachesEveryRunningWorker() {
        let group = WorkerGroup()
        for index in 1...3 {
            group.start("test-sleeper-\(index)") { worker in
                while worker.sleep(for: .seconds(60)) {}
            }
        }
        group.stopAll()
        #expect(group.join(within: .seconds(30)))
    }
}
