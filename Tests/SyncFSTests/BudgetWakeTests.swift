import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// A file read through a cache budget smaller than itself stays local while it is open; once it is
/// closed it must go at the budget keeper's next look — which the close itself asks for, or the
/// keeper of an otherwise idle mount would look only at its idle check (60 s). A mount test saw
/// the file still local 15 s after the close, under load. In the serialized engine suite.
extension SyncEngineTests {
    @Test func theLastCloseOfAFileOverTheBudgetWakesTheBudgetKeeper() async throws {
        let pair = try SyncedPair()
        let content = SeededGenerator.bytes(count: 2 << 20, seed: 7)
        try pair.a.makeFile("large.bin", contents: content)
        try await eventually("large.bin on B") { (try? contents(pair.b, "large.bin")) == content }
        try await pair.settle()
        let residency = pair.b.fs.residency
        let activity = residency.contentActivity
        let ino = try pair.b.lookupIno("large.bin")

        // Open, so the budget keeper cannot evict it: the cache stays over its budget.
        let reader = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        #expect(residency.eviction.enforceBudget(1 << 20) == 0, "an open file is never evicted")
        let overAfterOpen = residency.eviction.overBudget.load(ordering: .relaxed)
        #expect(overAfterOpen, "over the budget with the open file")
        _ = activity.waitForActivity(timeout: .zero)
        pair.b.fs.fileIO.release(reader)
        #expect(activity.waitForActivity(timeout: .zero), "the last close woke the keeper")
        #expect(residency.eviction.enforceBudget(1 << 20) == 1, "the closed file goes")
        let overAfterEviction = residency.eviction.overBudget.load(ordering: .relaxed)
        #expect(!overAfterEviction)

        // Within the budget, closes wake nobody (an idle mount's keeper sleeps).
        let again = try pair.b.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        _ = activity.waitForActivity(timeout: .zero)
        pair.b.fs.fileIO.release(again)
        #expect(!activity.waitForActivity(timeout: .zero), "no wake-up within the budget")
    }

    /// A file written here can be evicted only once uploaded: the budget keeper's look while it was
    /// queued evicts nothing, and the upload that leaves it clean must ask for the next look, or an
    /// idle mount's keeper sleeps until its idle check with the cache over its budget.
    @Test func anUploadThatLeavesAFileCleanOverTheBudgetWakesTheBudgetKeeper() async throws {
        let pair = try SyncedPair()
        let residency = pair.a.fs.residency
        let activity = residency.contentActivity
        try pair.withEngineAStopped {
            try pair.a.makeFile("written.bin", contents: SeededGenerator.bytes(count: 2 << 20, seed: 8))
            #expect(residency.eviction.enforceBudget(1 << 20) == 0, "a queued file is never evicted")
            let overWhileQueued = residency.eviction.overBudget.load(ordering: .relaxed)
            #expect(overWhileQueued, "over the budget with the queued file")
            _ = activity.waitForActivity(timeout: .zero)
        }
        try await pair.settle()
        // (The queue empties inside the upload's commit; the wake-up follows it.)
        #expect(activity.waitForActivity(timeout: .seconds(5)), "the upload woke the keeper")
        #expect(residency.eviction.enforceBudget(1 << 20) == 1, "the uploaded file goes")

        // Within the budget, uploads wake nobody (an idle mount's keeper sleeps).
        try pair.a.makeFile("small.txt", contents: Array("small".utf8))
        _ = activity.waitForActivity(timeout: .zero)
        try await pair.settle()
        #expect(!activity.waitForActivity(timeout: .zero), "no wake-up within the budget")
    }
}
