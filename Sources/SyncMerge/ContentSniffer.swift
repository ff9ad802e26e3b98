/// Whether content is text for merging.
public enum ContentSniffer {
    /// True when `bytes` is valid UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF)
    /// and holds no NUL byte. Empty content counts as text.
    public static func isText(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { isText($0) }
    }

    static func isText(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        let count = buffer.count
        var index = 0
        while index < count {
            // ASCII fast path, eight bytes at a time: no high bit set and no zero byte.
            if index + 8 <= count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                if word & 0x8080_8080_8080_8080 == 0 {
                    if (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0 { return false }
                    index += 8
                    continue
                }
            }
            let lead = buffer[index]
            if lead < 0x80 {
                if lead == 0 { return false }
                index += 1
                continue
            }
            guard let length = UTF8Sequence.length(buffer, at: index) else { return false }
            index += length
        }
        return true
    }
}

/// Validation and decoding of single UTF-8 sequences (RFC 3629).
enum UTF8Sequence {
    /// The length (2–4) of the valid multi-byte sequence starting at `index`, or nil when the
    /// bytes there are not one (a stray continuation byte, an overlong form, a surrogate, a value
    /// past U+10FFFF, or a truncated sequence). ASCII bytes are not handled here.
    static func length(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let lead = buffer[index]
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        let length: Int
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondHigh = 0x9F
        case 0xF0:
            length = 4
            secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondHigh = 0x8F
        default: return nil
        }
        guard index + length <= buffer.count else { return nil }
        guard (secondLow...secondHigh).contains(buffer[index + 1]) else { return nil }
        for offset in 2..<length where buffer[index + offset] & 0xC0 != 0x80 { return nil }
        return length
    }

    /// The scalar value of the valid sequence of `length` bytes at `index` (see `length`).
    static func scalar(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int, length: Int) -> UInt32 {
        let lead = UInt32(buffer[index])
        var value = length == 2 ? lead & 0x1F : length == 3 ? lead & 0x0F : lead & 0x07
        for offset in 1..<length { value = value << 6 | UInt32(buffer[index + offset] & 0x3F) }
        return value
    }
}
