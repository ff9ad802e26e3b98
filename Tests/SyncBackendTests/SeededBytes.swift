/// `count` pseudo-random bytes, the same for the same seed (xorshift64*, eight bytes per step).
func seededBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x2545_F491_4F6C_DD1D | 1
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initializedCount in
        let raw = UnsafeMutableRawBufferPointer(buffer)
        var offset = 0
        while offset < count {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            let word = (state &* 0x2545_F491_4F6C_DD1D).littleEndian
            withUnsafeBytes(of: word) { bytes in
                let take = min(8, count - offset)
                raw.baseAddress!.advanced(by: offset).copyMemory(from: bytes.baseAddress!, byteCount: take)
            }
            offset += 8
        }
        initializedCount = count
    }
}
