/// `Content-Disposition: attachment` for a file name of any bytes (RFC 6266, RFC 8187): an
/// ASCII `filename` in which everything but letters, digits, space, `.`, `-` and `_` is `_`,
/// and the exact bytes percent-encoded in `filename*`. Neither can end the header, add a
/// parameter or carry a path.
enum ContentDisposition {
    static func attachment(_ name: [UInt8]) -> String {
        let plain = name.map { byte -> Character in
            isPlain(byte) || byte == 0x20 ? Character(Unicode.Scalar(byte)) : "_"
        }
        let fallback = plain.isEmpty ? "download" : String(plain)
        var encoded = ""
        let digits = Array("0123456789ABCDEF")
        for byte in name {
            if isPlain(byte) {
                encoded.append(Character(Unicode.Scalar(byte)))
            } else {
                encoded += "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
            }
        }
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''\(encoded.isEmpty ? "download" : encoded)"
    }

    /// Letters, digits, `.`, `-`, `_` (a subset of RFC 8187's attr-char).
    private static func isPlain(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == 0x2E || byte == 0x2D || byte == 0x5F
    }
}
