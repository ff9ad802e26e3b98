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

    /// glibc gives an object its usable size plus an 8-byte header: 248 usable bytes is a
    /// 256-byte chunk (it was 336 before the fields were ordered and the measured blocks boxed).
    @Test func aNodeFitsInA256ByteChunk() {
        let node = Node(record: sampleRecord(7, name: "a-name"), xattrs: [:])
        let bytes = Self.usableSize(Unmanaged.passUnretained(node).toOpaque())
        #expect(bytes + 8 <= 256, "\(bytes) usable bytes")
    }
}
