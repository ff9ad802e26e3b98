/// User names: 1-64 bytes of `a-z 0-9 . _ - @`, starting with a letter or digit. Lowercase only,
/// so `Alice` and `alice` cannot be two accounts that look alike.
public enum AccountName {
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), isAlphanumeric(bytes[0]) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D || $0 == 0x40 }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// Why `name` is refused, for messages.
    public static let rule = "1-64 bytes of a-z 0-9 . _ - @, starting with a letter or digit"
}

/// Labels and device names: free text for people, at most 200 bytes, no control or format
/// characters (no bidirectional overrides that would make a listing read otherwise).
public enum AccessLabel {
    public static func isValid(_ text: String) -> Bool {
        text.utf8.count <= 200
            && !text.unicodeScalars.contains {
                $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
            }
    }
}
