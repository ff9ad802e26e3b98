import Foundation

/// FNV-1a 64-bit hash of bytes (content identity in tree snapshots).
enum ModelHash {
    static func fnv1a(_ bytes: UnsafeRawBufferPointer, into h: inout UInt64) {
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01B3
        }
    }

    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        bytes.withUnsafeBytes { fnv1a($0, into: &h) }
        return h
    }

    static func hex(_ h: UInt64) -> String {
        let s = String(h, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
