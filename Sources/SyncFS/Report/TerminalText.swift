/// Text from outside this process (file names from other machines, a container's error
/// messages) made safe to print on a terminal: every C0 or C1 control character and DEL is
/// written as `\xNN` (or `\u{NNNN}`), so a hostile name cannot move the cursor, retitle the window
/// or hide a line. Everything else, non-ASCII letters included, is kept.
public enum TerminalText {
    public static func safe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result +=
                    scalar.value < 0x100
                    ? "\\x" + hex(scalar.value, width: 2) : "\\u{" + hex(scalar.value, width: 4) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// C0 (tab and newline included: one item is one line), DEL, C1, and the bidirectional
    /// overrides and isolates that reorder what follows them on screen.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
