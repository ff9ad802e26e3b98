import SyncBackend
import Testing

@testable import SyncFS

@Suite("UploadQueue: order, quiet delay, backoff, re-dirtying (manual clock)")
struct UploadQueueTests {
    let policy = UploadQueue.Policy(quietDelay: 100, initialBackoff: 1_000, maximumBackoff: 8_000)
    let a = FileID.random()
    let b = FileID.random()
    let c = FileID.random()

    @Test func itemsWaitTheQuietDelayAndGoOldestFirst() {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 10)
        _ = queue.changed(c, now: 50)
        #expect(queue.takeNext(now: 99) == nil)
        #expect(queue.takeNext(now: 100)?.fileID == a)
        #expect(queue.takeNext(now: 130)?.fileID == b)
        #expect(queue.takeNext(now: 130) == nil, "c is still quiet")
        #expect(queue.nextReadyTime(now: 130) == 150)
        #expect(queue.takeNext(now: 150)?.fileID == c)
    }

    @Test func aChangeKeepsTheOrderButRestartsTheQuietDelay() {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 0)
        let again = queue.changed(a, now: 90)
        #expect(again.generation == 2)
        #expect(queue.takeNext(now: 100)?.fileID == b)
        #expect(queue.takeNext(now: 189) == nil, "a is still being written")
        #expect(queue.takeNext(now: 190)?.fileID == a)
    }

    @Test func inFlightItemsAreNotHandedOutTwice() {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let taken = queue.takeNext(now: 100)
        #expect(taken != nil)
        #expect(queue.takeNext(now: 1_000) == nil)
        #expect(queue.take(a) == nil)
        #expect(queue.nextReadyTime(now: 1_000) == nil)
    }

    @Test func reDirtiedDuringUploadIsQueuedAgain() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let takenValue = queue.takeNext(now: 100)
        let taken = try #require(takenValue)
        _ = queue.changed(a, now: 150)  // written while the upload ran
        #expect(queue.succeeded(taken) == false)
        #expect(queue.contains(a))
        #expect(queue.takeNext(now: 249) == nil)
        let secondValue = queue.takeNext(now: 250)
        let second = try #require(secondValue)
        #expect(second.generation == 2)
        #expect(queue.succeeded(second) == true)
        #expect(!queue.contains(a))
    }

    /// A wait (the container away or busy: no reason) backs off like a failure but leaves no
    /// reason, and clears the reason of an earlier real failure (`status` lists real failures only).
    @Test func waitingBacksOffWithoutAReason() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let firstValue = queue.takeNext(now: 100)
        let first = try #require(firstValue)
        let failedValue = queue.failed(first, reason: "refused", now: 100)
        let failed = try #require(failedValue)
        #expect(failed.lastError == "refused")
        let secondValue = queue.takeNext(now: failed.readyAt)
        let second = try #require(secondValue)
        let waitingValue = queue.failed(second, reason: nil, now: failed.readyAt, waitsForContainer: true)
        let waiting = try #require(waitingValue)
        #expect(waiting.lastError == nil)
        #expect(waiting.attempts == 2)
        #expect(waiting.readyAt - failed.readyAt == 2_000, "the backoff still doubles")
    }

    @Test func failuresBackOffExponentiallyUpToTheCap() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        var now: Int64 = 100
        var delays: [Int64] = []
        for _ in 0..<6 {
            let itemValue = queue.takeNext(now: now)
            let item = try #require(itemValue)
            let failedValue = queue.failed(item, reason: "offline", now: now)
            let failed = try #require(failedValue)
            #expect(failed.lastError == "offline")
            delays.append(failed.readyAt - now)
            #expect(queue.takeNext(now: failed.readyAt - 1) == nil)
            now = failed.readyAt
        }
        #expect(delays == [1_000, 2_000, 4_000, 8_000, 8_000, 8_000])
        #expect(queue.items[a]?.attempts == 6)
        // Nothing is ever dropped: the item is still there, with its reason.
        #expect(queue.contains(a))
    }

    @Test func syncMakesEverythingReadyNow() {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 0)
        queue.expediteAll(now: 5)
        #expect(queue.takeNext(now: 5)?.fileID == a)
        #expect(queue.takeNext(now: 5)?.fileID == b)
    }

    @Test func restoredItemsKeepTheirOrderAndNewOnesComeAfter() {
        let stored = [
            OutboxItem(fileID: b, seq: 7, generation: 3, readyAt: 0, attempts: 2, lastError: "x"),
            OutboxItem(fileID: a, seq: 4, generation: 1, readyAt: 0, attempts: 0, lastError: nil),
        ]
        var queue = UploadQueue(policy: policy, restoring: stored, now: 1_000)
        let fresh = queue.changed(c, now: 1_000)
        #expect(fresh.seq == 8)
        #expect(queue.takeNext(now: 1_099) == nil)
        #expect(queue.takeNext(now: 1_100)?.fileID == a)
        #expect(queue.takeNext(now: 1_100)?.fileID == b)
        #expect(queue.takeNext(now: 1_100)?.fileID == c)
    }

    @Test func postponedItemsWait() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let itemValue = queue.takeNext(now: 100)
        let item = try #require(itemValue)
        queue.postpone(item, until: 500)
        #expect(queue.takeNext(now: 499) == nil)
        #expect(queue.takeNext(now: 500)?.fileID == a)
    }

    @Test func aBurstOfChangesHoldsUploadsBackUntilItEndsOrTheWaitRunsOut() {
        let burstPolicy = UploadQueue.Policy(
            quietDelay: 100, initialBackoff: 1_000, maximumBackoff: 8_000, burstChanges: 4, burstWindow: 50,
            maximumBurstWait: 1_000)
        var queue = UploadQueue(policy: burstPolicy)
        let ids = (0..<4).map { _ in FileID.random() }
        _ = queue.changed(ids[0], now: 0)
        #expect(!queue.isBursting(now: 0), "one change is not a burst")
        #expect(queue.takeNext(now: 100)?.fileID == ids[0])
        // Four changes within 50 ns: a burst; nothing goes while it lasts.
        for (index, id) in ids.dropFirst().enumerated() { _ = queue.changed(id, now: 200 + Int64(index)) }
        _ = queue.changed(ids[0], now: 203)
        #expect(queue.isBursting(now: 240))
        #expect(queue.takeNext(now: 240) == nil)
        #expect(queue.nextReadyTime(now: 240) == 300, "look again when the earliest item is ready")
        // The burst is over 50 ns after its oldest change: items go in order again.
        #expect(!queue.isBursting(now: 400))
        #expect(queue.takeNext(now: 400)?.fileID == ids[1])
    }

    @Test func aBurstThatNeverEndsStillLetsItemsGoAfterTheMaximumWait() {
        let burstPolicy = UploadQueue.Policy(
            quietDelay: 100, initialBackoff: 1_000, maximumBackoff: 8_000, burstChanges: 4, burstWindow: 50,
            maximumBurstWait: 1_000)
        var queue = UploadQueue(policy: burstPolicy)
        let first = FileID.random()
        _ = queue.changed(first, now: 0)
        var now: Int64 = 1
        var taken: OutboxItem?
        while now < 2_000 && taken == nil {
            _ = queue.changed(FileID.random(), now: now)  // a change every 10 ns, forever
            taken = queue.takeNext(now: now)
            now += 10
        }
        #expect(taken?.fileID == first)
        #expect(now - 10 >= 100 + 1_000, "it waited the maximum burst wait past its ready time")
    }

    @Test func syncOverridesABurst() {
        let burstPolicy = UploadQueue.Policy(
            quietDelay: 100, initialBackoff: 1_000, maximumBackoff: 8_000, burstChanges: 4, burstWindow: 50,
            maximumBurstWait: 1_000)
        var queue = UploadQueue(policy: burstPolicy)
        for index in 0..<5 { _ = queue.changed(FileID.random(), now: Int64(index)) }
        #expect(queue.takeNext(now: 10) == nil)
        queue.expediteAll(now: 10)
        #expect(queue.takeNext(now: 10) != nil)
    }

    @Test func itemsThatFailedOnAnUnreachableContainerGoAsSoonAsItAnswers() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 0)
        _ = queue.changed(c, now: 0)
        // a fails four times on an unreachable container (tried at once each time, as parents
        // are): its backoff grows to 8,000.
        for now: Int64 in [100, 200, 300, 400] {
            let itemValue = queue.take(a)
            let item = try #require(itemValue)
            _ = queue.failed(item, reason: "offline", now: now, waitsForContainer: true)
        }
        let backedOff = queue.items[a]?.readyAt
        #expect(backedOff == 8_400, "400 + the maximum backoff")
        // b fails for another reason (it keeps its backoff); c is written again after failing.
        let takenB = queue.take(b)
        let itemB = try #require(takenB)
        _ = queue.failed(itemB, reason: "the parent is not there yet", now: 400, waitsForContainer: false)
        let takenC = queue.take(c)
        let itemC = try #require(takenC)
        _ = queue.failed(itemC, reason: "offline", now: 400, waitsForContainer: true)
        _ = queue.changed(c, now: 550)
        #expect(queue.takeNext(now: 600) == nil, "everything is backing off")

        // The container answers: a is ready at once; c after its quiet delay; b keeps its backoff.
        #expect(queue.containerAnswered(now: 600) == 2)
        let takenA = queue.takeNext(now: 600)
        let readyA = try #require(takenA)
        #expect(readyA.fileID == a)
        #expect(readyA.attempts == 4, "the attempts stay: a new failure backs off further")
        #expect(queue.takeNext(now: 600) == nil)
        let readyC = queue.items[c]?.readyAt
        #expect(readyC == 650, "c was written again: it waits its quiet delay")
        #expect(queue.takeNext(now: 650)?.fileID == c)
        #expect(queue.takeNext(now: 650) == nil, "b waits its backoff")
        // Another answer changes nothing more.
        #expect(queue.containerAnswered(now: 700) == 0)
    }

    @Test func anItemInFlightWhenTheContainerAnswersIsMarkedAgainByItsNextFailure() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let first = queue.takeNext(now: 100)
        var item = try #require(first)
        _ = queue.failed(item, reason: "offline", now: 100, waitsForContainer: true)
        let second = queue.take(a)
        item = try #require(second)
        #expect(queue.containerAnswered(now: 150) == 0, "in flight: it is being tried now")
        let failedValue = queue.failed(item, reason: "offline", now: 160, waitsForContainer: true)
        #expect(try #require(failedValue).readyAt == 160 + 2_000)
        #expect(queue.containerAnswered(now: 170) == 1)
        #expect(queue.takeNext(now: 170)?.fileID == a)
        // Written while an attempt ran: after an answer it still waits a quiet delay.
        let again = try #require(queue.items[a])
        _ = queue.changed(a, now: 180)
        _ = queue.failed(again, reason: "offline", now: 190, waitsForContainer: true)
        #expect(queue.containerAnswered(now: 200) == 1)
        let readyAt = queue.items[a]?.readyAt
        #expect(readyAt == 290, "190 + the quiet delay")
    }
}
