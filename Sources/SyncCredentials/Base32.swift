/// Base32 as RFC 4648 section 6 defines it (alphabet A-Z, 2-7): the encoding of TOTP secrets
/// that authenticator apps read.
public enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// `bytes` in base32; with `padding`, `=` fills the last group to 8 characters.
    public static func encode(_ bytes: [UInt8], padding: Bool = false) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 4) / 5 * 8)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                output.append(alphabet[Int((buffer >> UInt32(bits)) & 0x1F)])
            }
        }
        if bits > 0 {
            output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1F)])
        }
        if padding {
            while output.count % 8 != 0 { output.append(UInt8(ascii: "=")) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil when it is not base32: a character outside the alphabet
    /// (lower case is accepted as upper case), a length no byte count encodes to, leftover bits
    /// that are not zero, or `=` anywhere but as the padding of a whole last group.
    public static func decode(_ text: String) -> [UInt8]? {
        var characters = Array(text.utf8)
        if let firstPad = characters.firstIndex(of: UInt8(ascii: "=")) {
            guard characters.count % 8 == 0, characters[firstPad...].allSatisfy({ $0 == UInt8(ascii: "=") }) else {
                return nil
            }
            characters.removeSubrange(firstPad...)
            // Padding fills a last group that is not whole: never a group of `=` alone.
            guard characters.count % 8 != 0 else { return nil }
        }
        // A last group of 1, 3 or 6 characters would end in a partial byte of 5 or more bits.
        guard ![1, 3, 6].contains(characters.count % 8) else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for character in characters {
            guard let value = value(of: character) else { return nil }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                output.append(UInt8((buffer >> UInt32(bits)) & 0xFF))
            }
        }
        // The bits left over only fill the last character: a canonical encoding has them zero.
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return output
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): return character - UInt8(ascii: "2") + 26
        default: return nil
        }
    }
}
