import Glibc
import Testing

@testable import SyncFS

/// The tree keeps one `Node` per entry the kernel or the engine uses: its size is memory per
/// entry (doc/PERFORMANCE.md, "Big trees").
@Suite("Node: bytes per entry")
struct NodeFootprintTests {
    /// glibc's `malloc_usable_size` (the Glibc module does not export it): what the allocator
    /// gave the object.
    static func usableSize(_ pointer: UnsafeMutableRawPointer) -> Int {
        let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_usable_size")!
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer) -> Int).self)(pointer)
    }

    /// glibc gives an object its usable size plus an 8-byte header: 184 usable bytes is a
    /// 192-byte chunk (it was 336 before the fields were ordered and the measured blocks boxed,
    /// 256 before the seldom-used fields were boxed).
    @Test func aFileAtRestFitsInA192ByteChunk() {
        let node = Node(record: sampleRecord(7, name: "a-name"), xattrs: [:])
        let bytes = Self.usableSize(Unmanaged.passUnretained(node).toOpaque())
        #expect(bytes + 8 <= 192, "\(bytes) usable bytes")
        #expect(node.seldomUsed == nil)
    }

    /// The seldom-used fields' box comes with the first of them set and goes with the last
    /// cleared, so a file that was opened and closed, or downloaded, returns to its size at rest.
    @Test func theSeldomUsedBoxGoesWhenItsLastFieldIsCleared() {
        let node = Node(record: sampleRecord(7, name: "a-name"), xattrs: [:])
        node.hydration = nil
        #expect(node.seldomUsed == nil, "clearing a field that was never set makes no box")
        node.openCount += 1
        node.openWriters += 1
        #expect(node.seldomUsed != nil)
        node.openWriters -= 1
        #expect(node.seldomUsed != nil, "one handle is still open")
        node.openCount -= 1
        #expect(node.seldomUsed == nil)
        node.xattrs["user.note"] = [1]
        #expect(node.xattrs == ["user.note": [1]])
        node.openCount = 1
        node.openCount = 0
        #expect(node.seldomUsed != nil, "the attribute keeps the box")
        #expect(node.xattrs == ["user.note": [1]])
        node.xattrs["user.note"] = nil
        #expect(node.seldomUsed == nil, "the last attribute removed")
        node.xattrs.removeValue(forKey: "user.absent")
        #expect(node.seldomUsed == nil, "removing an absent attribute")
    }

    /// The follower sets every remote entry's attributes, most often to none: that leaves no box.
    @Test func settingNoAttributesOrChildrenMakesNoBox() {
        let node = Node(record: sampleRecord(7, name: "a-name"), xattrs: [:])
        node.xattrs = [:]
        node.children = [:]
        #expect(node.seldomUsed == nil)
        node.xattrs = ["user.a": [1]]
        node.xattrs = [:]
        #expect(node.seldomUsed == nil)
    }

    /// Files, directories and symlinks read the same values through the box as they were given.
    @Test func aNodeMadeFromARecordKeepsItsSeldomUsedFields() {
        let record = sampleRecord(8, name: "link", kind: .symlink, symlinkTarget: Array("target".utf8))
        let link = Node(record: record, xattrs: ["user.a": [2]])
        #expect(link.symlinkTarget == Array("target".utf8))
        #expect(link.xattrs == ["user.a": [2]])
        #expect(link.record.symlinkTarget == Array("target".utf8))
        let directory = Node(record: sampleRecord(9, name: "d", kind: .directory), xattrs: [:])
        directory.children[FileName("a")] = InodeNumber(10)
        directory.subdirectoryCount = 1
        #expect(directory.children == [FileName("a"): InodeNumber(10)])
        directory.children[FileName("a")] = nil
        #expect(directory.children.isEmpty)
        directory.subdirectoryCount = 0
        #expect(directory.seldomUsed == nil, "an emptied directory returns to its size at rest")
    }
}
