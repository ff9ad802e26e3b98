import Testing

@testable import SyncFS

@Suite("InodeTable: the kernel's lookup references")
struct InodeTableTests {
    let file = InodeNumber(2)
    let other = InodeNumber(3)

    @Test func unknownInodeHasNoReferences() {
        let table = InodeTable(generation: 1)
        #expect(table.lookupCount(file) == 0)
        #expect(!table.isReferenced(file))
        #expect(table.referencedCount == 0)
    }

    @Test func rememberCountsEachReply() {
        var table = InodeTable(generation: 1)
        table.remember(file)
        #expect(table.lookupCount(file) == 1)
        table.remember(file)
        table.remember(file)
        #expect(table.lookupCount(file) == 3)
        #expect(table.isReferenced(file))
        table.remember(other)
        #expect(table.lookupCount(other) == 1)
        #expect(table.lookupCount(file) == 3, "counts are per inode")
        #expect(table.referencedCount == 2)
    }

    @Test func forgetBelowTheCountKeepsTheReference() {
        var table = InodeTable(generation: 1)
        for _ in 0..<5 { table.remember(file) }
        #expect(table.forget(file, count: 2) == false)
        #expect(table.lookupCount(file) == 3)
        #expect(table.forget(file, count: 1) == false)
        #expect(table.lookupCount(file) == 2)
        #expect(table.isReferenced(file))
    }

    @Test func forgetToZeroReturnsTrueAndDropsTheInode() {
        var table = InodeTable(generation: 1)
        table.remember(file)
        table.remember(file)
        table.remember(other)
        #expect(table.forget(file, count: 1) == false)
        #expect(table.forget(file, count: 1) == true)
        #expect(table.lookupCount(file) == 0)
        #expect(!table.isReferenced(file))
        #expect(table.referencedCount == 1, "only the other inode is still referenced")
        #expect(table.isReferenced(other))
    }

    @Test func overForgetClampsAtZero() {
        var table = InodeTable(generation: 1)
        table.remember(file)
        table.remember(file)
        #expect(table.forget(file, count: 10) == true)
        #expect(table.lookupCount(file) == 0)
        #expect(table.referencedCount == 0)
        // Counting starts again from zero, not from a wrapped-around value.
        table.remember(file)
        #expect(table.lookupCount(file) == 1)
        #expect(table.forget(file, count: UInt64.max) == true)
        #expect(table.lookupCount(file) == 0)
    }

    @Test func forgetOfAnUnreferencedInodeReportsNoReference() {
        var table = InodeTable(generation: 1)
        #expect(table.forget(file, count: 1) == true)
        #expect(table.lookupCount(file) == 0)
        #expect(table.referencedCount == 0)
    }

    @Test func rootIsNeverForgotten() {
        var table = InodeTable(generation: 1)
        #expect(table.lookupCount(.root) == 1)
        #expect(table.isReferenced(.root))
        table.remember(.root)
        table.remember(.root)
        #expect(table.lookupCount(.root) == 1, "the root is implicitly referenced, not counted")
        #expect(table.referencedCount == 0, "the root is not among the counted inodes")
        #expect(table.forget(.root, count: 1) == false)
        #expect(table.forget(.root, count: UInt64.max) == false)
        #expect(table.lookupCount(.root) == 1)
        #expect(table.isReferenced(.root))
    }

    @Test(arguments: [UInt64(0), 1, 7, UInt64.max])
    func generationIsKept(_ generation: UInt64) {
        var table = InodeTable(generation: generation)
        #expect(table.generation == generation)
        table.remember(file)
        table.remember(other)
        table.forget(file, count: 1)
        table.forget(other, count: 5)
        table.forget(.root, count: 1)
        #expect(table.generation == generation)
    }
}
