import Foundation

/// Names every distinct line of some texts by a dense integer (0, 1, 2, …): two lines get the same
/// ID exactly when their bytes are equal (hash collisions are settled by comparing the bytes).
/// `LineDiff`'s exact fallback when line hashes alone would have matched different lines.
enum LineInterner {
    /// The line IDs of each text, in order.
    static func ids(_ texts: [Lines]) -> [[UInt64]] {
        withBuffers(texts.map(\.bytes)[...], []) { buffers in
            var table = Table(lineCount: texts.reduce(0) { $0 + $1.count })
            return zip(texts, buffers).enumerated().map { textIndex, pair in
                let (text, buffer) = pair
                var ids: [UInt64] = []
                ids.reserveCapacity(text.count)
                var start = 0
                for end in text.ends {
                    ids.append(table.intern(buffer, textIndex, start, end, buffers))
                    start = end
                }
                return ids
            }
        }
    }

    /// Runs `body` with stable pointers to the bytes of every array.
    private static func withBuffers<R>(
        _ arrays: ArraySlice<[UInt8]>, _ done: [UnsafeBufferPointer<UInt8>],
        _ body: ([UnsafeBufferPointer<UInt8>]) -> R
    ) -> R {
        guard let first = arrays.first else { return body(done) }
        return first.withUnsafeBufferPointer { withBuffers(arrays.dropFirst(), done + [$0], body) }
    }
}

/// An open-addressing hash table from line contents to IDs.
private struct Table {
    private var slots: [Int32]
    private var slotHashes: [UInt64]
    private let mask: Int
    /// Where the first line with each ID is: text, start, end.
    private var representatives: [(text: Int, start: Int, end: Int)] = []

    init(lineCount: Int) {
        var capacity = 16
        while capacity < 2 * lineCount { capacity <<= 1 }
        slots = [Int32](repeating: -1, count: capacity)
        slotHashes = [UInt64](repeating: 0, count: capacity)
        mask = capacity - 1
    }

    mutating func intern(
        _ buffer: UnsafeBufferPointer<UInt8>, _ text: Int, _ start: Int, _ end: Int,
        _ buffers: [UnsafeBufferPointer<UInt8>]
    ) -> UInt64 {
        let hash = LineHash.hash(buffer, start, end)
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let id = slots[slot]
            if id < 0 {
                let newID = Int32(representatives.count)
                slots[slot] = newID
                slotHashes[slot] = hash
                representatives.append((text, start, end))
                return UInt64(newID)
            }
            if slotHashes[slot] == hash {
                let other = representatives[Int(id)]
                if other.end - other.start == end - start
                    && (start == end
                        || memcmp(
                            buffer.baseAddress! + start, buffers[other.text].baseAddress! + other.start, end - start)
                            == 0)
                {
                    return UInt64(id)
                }
            }
            slot = (slot + 1) & mask
        }
    }
}
