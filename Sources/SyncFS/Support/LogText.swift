/// Text for log lines.
enum LogText {
    /// `text` on one line: control characters (a line break in a remote name) shown escaped.
    static func line(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `0.125 s`.
    static func seconds(_ value: Double) -> String {
        let milliseconds = Int((value * 1000).rounded())
        let fraction = milliseconds % 1000
        return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - String(fraction).count) + "\(fraction) s"
    }
}
