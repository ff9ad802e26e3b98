import SyncBackend
import Testing

@testable import SyncFS

@Suite("UploadQueue: changes held as ignored stay queued and are not taken again")
struct UploadQueueHeldTests {
    let policy = UploadQueue.Policy(quietDelay: 100, initialBackoff: 1_000, maximumBackoff: 8_000)
    let a = FileID.random()
    let b = FileID.random()

    @Test func aHeldItemIsNeitherTakenNorWaitedFor() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let next = queue.takeNext(now: 100)
        queue.hold(try #require(next))
        #expect(queue.contains(a), "it stays queued (and stored)")
        #expect(queue.count == 1 && queue.activeCount == 0)
        #expect(queue.takeNext(now: 1_000_000) == nil, "not handed out again: the uploader does not spin on it")
        #expect(queue.take(a) == nil)
        #expect(queue.nextReadyTime(now: 1_000_000) == nil, "nothing to wake the uploader for")
    }

    @Test func otherItemsGoPastAHeldOne() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 10)
        let next100 = queue.takeNext(now: 100)
        queue.hold(try #require(next100))
        #expect(queue.takeNext(now: 110)?.fileID == b)
    }

    @Test func aNewChangeOfTheEntryIsLookedAtAgain() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let next100 = queue.takeNext(now: 100)
        queue.hold(try #require(next100))
        _ = queue.changed(a, now: 200)
        #expect(queue.activeCount == 0, "still counted as ignored until looked at")
        #expect(queue.takeNext(now: 299) == nil, "its quiet delay first")
        #expect(queue.takeNext(now: 300)?.fileID == a)
    }

    @Test func changedRulesReleaseEveryHeldItemAtOnce() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 0)
        let first = queue.takeNext(now: 100)
        queue.hold(try #require(first))
        let second = queue.takeNext(now: 100)
        queue.hold(try #require(second))
        #expect(queue.releaseHeld(now: 5_000) == 2)
        #expect(queue.activeCount == 2)
        #expect(queue.takeNext(now: 5_000) != nil)
        #expect(queue.takeNext(now: 5_000) != nil)
    }

    @Test func removingAHeldItemForgetsIt() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 0)
        let next100 = queue.takeNext(now: 100)
        queue.hold(try #require(next100))
        let heldID = try #require(queue.held.first)
        queue.remove(heldID)
        #expect(queue.held.isEmpty)
        #expect(queue.activeCount == 1)
    }

    /// A change between the verdict and `hold` leaves the item ready (failed before: the new
    /// change was held with the old verdict, forever).
    @Test func aChangeWhileInFlightIsNotHeld() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let next = queue.takeNext(now: 100)
        let taken = try #require(next)
        _ = queue.changed(a, now: 150)
        let held = queue.hold(taken)
        #expect(!held)
        #expect(queue.held.isEmpty && queue.activeCount == 1)
        #expect(queue.takeNext(now: 250)?.fileID == a, "looked at again after its quiet delay")
    }

    /// Rules released while the verdict was being made leave the item ready (failed before: it
    /// was held under the old rules and the release had already passed).
    @Test func aReleaseWhileInFlightIsNotMissed() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let next = queue.takeNext(now: 100)
        let taken = try #require(next)
        queue.releaseHeld(now: 150)
        let held = queue.hold(taken)
        #expect(!held)
        let again = queue.takeNext(now: 150)
        #expect(again?.fileID == a)
    }

    /// An item waiting for the rules counts as still to upload, and a read of the rules that
    /// changed nothing releases it alone.
    @Test func aWaitingItemIsPendingAndReleasedByItself() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        _ = queue.changed(b, now: 0)
        let first = queue.takeNext(now: 100)
        queue.hold(try #require(first), reason: .waiting)
        let second = queue.takeNext(now: 100)
        queue.hold(try #require(second), reason: .ignored)
        #expect(first?.fileID == a)
        #expect(queue.activeCount == 1, "the waiting one")
        #expect(!queue.isIgnored(a) && queue.isIgnored(b))
        let released = queue.releaseWaiting(now: 200)
        #expect(released == 1)
        let next = queue.takeNext(now: 200)
        #expect(next?.fileID == a)
        let none = queue.takeNext(now: 200)
        #expect(none == nil, "the ignored one stays held")
    }

    /// A write to an ignored file has it looked at again, but it counts as ignored meanwhile
    /// (failed before: it counted as still to upload, a round the mount announced as `synced`).
    @Test func aChangedIgnoredItemIsLookedAtAgainAsIgnored() throws {
        var queue = UploadQueue(policy: policy)
        _ = queue.changed(a, now: 0)
        let first = queue.takeNext(now: 100)
        queue.hold(try #require(first))
        _ = queue.changed(a, now: 200)
        #expect(queue.activeCount == 0 && queue.isIgnored(a))
        let again = queue.takeNext(now: 300)
        #expect(again?.fileID == a, "looked at again")
        queue.hold(try #require(again))
        #expect(queue.activeCount == 0 && queue.isIgnored(a))
        _ = queue.changed(a, now: 400)
        let third = queue.takeNext(now: 500)
        queue.postpone(try #require(third), until: 600)
        #expect(queue.activeCount == 1, "found to upload: it counts again")
    }
}
