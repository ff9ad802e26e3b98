import Foundation
import SyncBackend
import SyncMerge
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

@Suite("RulesWatch: the rules files' errors, once per distinct error")
struct RulesWatchTests {
    @Test func anErrorIsNewOnceAndClearsWhenFixed() {
        let watch = RulesWatch()
        #expect(watch.record(path: ".syncfs-rules", error: "line 2: x") == true)
        #expect(watch.record(path: ".syncfs-rules", error: "line 2: x") == false, "the same error again")
        #expect(watch.errors == [RulesFileError(path: ".syncfs-rules", message: "line 2: x")])
        #expect(watch.record(path: ".syncfs-rules", error: "line 3: y") == true, "another error")
        #expect(watch.record(path: ".syncfs-rules", error: nil) == false)
        #expect(watch.errors.isEmpty)
        #expect(watch.record(path: ".syncfs-rules", error: "line 3: y") == true, "back after a fix: new again")
    }

    /// The rules file is synced (a hostile token holder writes it): what `status` prints of it
    /// holds no control character (no terminal escape) and is bounded.
    @Test func theMessageIsOneBoundedPrintableLine() throws {
        let hostile = [
            RuleProblem(line: 1, message: "bad \u{1B}]0;owned\u{07} \u{1B}[2J\r\nfake: line"),
            RuleProblem(line: 2, message: String(repeating: "z", count: 5000) + "\u{9B}"),
        ]
        let message = try #require(RulesWatch.message(hostile))
        #expect(!message.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "\(message)")
        #expect(message.hasPrefix("line 1: bad ?]0;owned? ?[2J??fake: line; line 2: zzz"))
        #expect(message.count == 1000)
        #expect(RulesWatch.message([]) == nil)
    }
}

@Suite("MergeCommandWorker: off the uploader, one per file, bounded")
struct MergeCommandWorkerTests {
    let outbox = Outbox(
        policy: UploadQueue.Policy(quietDelay: 0, initialBackoff: 1_000, maximumBackoff: 8_000), restoring: [],
        clock: { 0 })

    func inputs(_ version: EntryVersion) -> MergeCommandWorker.Inputs {
        .init(command: "slow", path: "a.txt", theirsVersion: version, ours: [], theirs: [], base: [])
    }

    @Test func aResultIsTakenOnceForTheSameInputsAndDroppedForNewOnes() {
        let worker = MergeCommandWorker(outbox: outbox)
        let id = FileID.random()
        _ = outbox.changed(id)
        let gate = DispatchSemaphore(value: 0)
        let parks = Atomic<Int>(0)
        let park = { _ = parks.add(1, ordering: .relaxed) }
        guard case .idle = worker.answer(for: id, inputs: inputs(1), park: park) else {
            Issue.record("nothing known yet")
            return
        }
        worker.start(id, inputs: inputs(1), park: park) {
            gate.wait()
            return .success(.keepBoth(reason: "v1"))
        }
        guard case .waiting = worker.answer(for: id, inputs: inputs(1), park: park) else {
            Issue.record("running: the uploader waits")
            return
        }
        // The file changed while the command runs: it still runs alone (one per file).
        guard case .waiting = worker.answer(for: id, inputs: inputs(2), park: park) else {
            Issue.record("one command per file")
            return
        }
        #expect(parks.load(ordering: .relaxed) == 3, "every start and wait parks the item")
        gate.signal()
        #expect(waitUntil(timeout: 20) { !worker.isBusy(id) })
        // Its result was for old versions: dropped, the next ask merges again.
        guard case .idle = worker.answer(for: id, inputs: inputs(2), park: park) else {
            Issue.record("a stale result is never used")
            return
        }
        worker.start(id, inputs: inputs(2), park: park) { .success(.keepBoth(reason: "v2")) }
        #expect(waitUntil(timeout: 20) { !worker.isBusy(id) })
        guard case .done(.success(.keepBoth(let reason))) = worker.answer(for: id, inputs: inputs(2), park: park)
        else {
            Issue.record("the result for the current versions")
            return
        }
        #expect(reason == "v2")
        // A result whose change is no longer queued (deleted meanwhile) is dropped at once.
        let gone = FileID.random()
        worker.start(gone, inputs: inputs(1), park: park) { .success(.keepBoth(reason: "late")) }
        #expect(waitUntil(timeout: 20) { !worker.isBusy(gone) })
        guard case .idle = worker.answer(for: gone, inputs: inputs(1), park: park) else {
            Issue.record("a result for a change that is gone is not kept")
            return
        }
        guard case .idle = worker.answer(for: id, inputs: inputs(2), park: park) else {
            Issue.record("a result is taken once")
            return
        }
        worker.stop()
    }

    @Test func atMostTwoCommandsRunAndOthersWaitTheirTurn() {
        let worker = MergeCommandWorker(outbox: outbox, slots: 2)
        let gate = DispatchSemaphore(value: 0)
        let running = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        let ids = (0..<4).map { _ in FileID.random() }
        let nothing: () -> Void = {}
        for id in ids {
            worker.start(id, inputs: inputs(1), park: nothing) {
                let now = running.add(1, ordering: .sequentiallyConsistent).newValue
                _ = most.max(now, ordering: .sequentiallyConsistent)
                gate.wait()
                running.subtract(1, ordering: .sequentiallyConsistent)
                return .success(.keepBoth(reason: "done"))
            }
        }
        #expect(waitUntil(timeout: 20) { running.load(ordering: .sequentiallyConsistent) == 2 })
        usleep(100_000)  // scenario: time for a third run that must not start
        #expect(running.load(ordering: .sequentiallyConsistent) == 2, "bounded")
        // Two run and two wait: a sixth file is told to wait without reading its versions.
        let sixth = FileID.random()
        guard case .waiting = worker.answer(for: sixth, inputs: inputs(1), park: nothing) else {
            Issue.record("the queue is full: the file waits its turn unread")
            return
        }
        for _ in ids { gate.signal() }
        #expect(waitUntil(timeout: 20) { ids.allSatisfy { !worker.isBusy($0) } })
        #expect(most.load(ordering: .sequentiallyConsistent) == 2)
        guard case .idle = worker.answer(for: sixth, inputs: inputs(1), park: nothing) else {
            Issue.record("its turn once the queue drained")
            return
        }
        worker.stop()
    }
}
