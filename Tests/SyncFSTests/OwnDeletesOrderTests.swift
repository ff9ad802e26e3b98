import SyncBackend
import Testing

@testable import SyncFS

/// The order of this mount's queued deletes below a refused folder delete, and what a hostile
/// container's parents (the sync bases' parents, as it sent them) can do to it.
struct OwnDeletesOrderTests {
    let folder = FileID.random()
    let a = FileID.random()
    let b = FileID.random()
    let c = FileID.random()

    @Test func aChainGoesDeepestFirst() {
        let index = [folder: [a], a: [b], b: [c]]
        #expect(OwnDeletesOrder.deepestFirst(below: folder, in: index) == [c, b, a])
    }

    @Test func siblingsOfOneLevelGoTogetherAfterTheLevelBelow() {
        let index = [folder: [a, b], a: [c]]
        #expect(OwnDeletesOrder.deepestFirst(below: folder, in: index) == [c, a, b])
    }

    @Test func nothingQueuedBelowIsAnEmptyList() {
        #expect(OwnDeletesOrder.deepestFirst(below: folder, in: [a: [b]]).isEmpty)
    }

    /// Hostile: `a` and `b` each claim the other as parent. The walk ends, each listed once.
    @Test func aCycleOfParentsEndsAndListsEachOnce() {
        let index = [folder: [a], a: [b], b: [a]]
        #expect(OwnDeletesOrder.deepestFirst(below: folder, in: index) == [b, a])
    }

    /// Hostile: an entry below claims the refused folder as its child. The folder itself is never
    /// among the deletes uploaded before it.
    @Test func theFolderItselfIsNeverListed() {
        let index = [folder: [a], a: [folder, b]]
        #expect(OwnDeletesOrder.deepestFirst(below: folder, in: index) == [b, a])
    }

    /// Hostile: one entry listed under two folders (and twice under one) goes once, at the
    /// shallower level where it was met first.
    @Test func anEntryUnderTwoFoldersIsListedOnce() {
        let index = [folder: [a, b, b], a: [c], b: [c]]
        let order = OwnDeletesOrder.deepestFirst(below: folder, in: index)
        #expect(order == [c, a, b])
        #expect(Set(order).count == order.count)
    }
}
