/// A duration as a person types it (`pause --for`, `token create --expires`, `audit --since`):
/// one or more parts, each a whole number and a unit — `w` weeks, `d` days, `h` hours, `m`
/// minutes, `s` seconds — largest first, each unit at most once:
/// `30m`, `2h`, `1h30m`, `90s`, `1h0m5s`, `7d`, `2w3d`. Nothing else is accepted (no spaces, signs,
/// fractions, bare numbers or other units), and the total must be between 1 s and 366 days.
public enum DurationText {
    /// The longest duration accepted: a pause of more than a year is a mistake, not a plan.
    public static let longest: Int = 366 * 24 * 3600

    /// The duration in seconds, or why `text` is not one (a sentence for the user).
    public static func seconds(_ text: String) -> Result<Int, DurationError> {
        let units: [(Character, Int)] = [("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)]
        var total = 0
        var digits = ""
        var nextUnit = 0
        for character in text {
            if character.isASCII && character.isNumber {
                digits.append(character)
                guard digits.count <= 9 else { return .failure(DurationError(text, "a number is too long")) }
                continue
            }
            guard let index = units.firstIndex(where: { $0.0 == character }) else {
                return .failure(DurationError(text, "unexpected '\(character)'"))
            }
            guard !digits.isEmpty else {
                return .failure(DurationError(text, "'\(character)' needs a number before it"))
            }
            guard index >= nextUnit else {
                return .failure(DurationError(text, "the units go largest first, each once (like 1h30m)"))
            }
            total += Int(digits)! * units[index].1
            guard total <= longest else { return .failure(DurationError(text, "longer than 366 days")) }
            digits = ""
            nextUnit = index + 1
        }
        guard digits.isEmpty else { return .failure(DurationError(text, "a number needs a unit (w, d, h, m or s)")) }
        guard nextUnit > 0 else { return .failure(DurationError(text, "empty")) }
        guard total > 0 else { return .failure(DurationError(text, "it must be at least 1s")) }
        return .success(total)
    }
}

/// Why a text is not a duration (`DurationText`).
public struct DurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let text: String
    public let problem: String

    init(_ text: String, _ problem: String) {
        self.text = text
        self.problem = problem
    }

    public var description: String {
        "not a duration: \"\(text)\" (\(problem)); write weeks, days, hours, minutes and seconds like 30m, 2h, 1h30m, 90s or 7d"
    }
}
