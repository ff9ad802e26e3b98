/// 64-bit hashes of lines, for diffing: equal lines have equal hashes; different lines almost
/// never do, and `LineDiff` checks every match byte for byte anyway.
enum LineHash {
    /// The hash of every line of `text`, in order (one sequential pass over its bytes).
    static func hashes(_ text: Lines) -> [UInt64] {
        text.bytes.withUnsafeBufferPointer { buffer in
            var hashes: [UInt64] = []
            hashes.reserveCapacity(text.count)
            var start = 0
            for end in text.ends {
                hashes.append(hash(buffer, start, end))
                start = end
            }
            return hashes
        }
    }

    /// A 64-bit hash of `buffer[start..<end]`, eight bytes at a time.
    static func hash(_ buffer: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> UInt64 {
        var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(end - start)
        guard end > start, let base = buffer.baseAddress else { return hash }
        var offset = start
        while offset + 8 <= end {
            let word = UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
            hash = (hash ^ word) &* 0xBF58_476D_1CE4_E5B9
            hash ^= hash >> 31
            offset += 8
        }
        var tail: UInt64 = 0
        while offset < end {
            tail = tail << 8 | UInt64(base[offset])
            offset += 1
        }
        hash = (hash ^ tail) &* 0x94D0_49BB_1331_11EB
        hash ^= hash >> 29
        hash = hash &* 0xBF58_476D_1CE4_E5B9
        return hash ^ (hash >> 32)
    }
}
