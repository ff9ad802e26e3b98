/// The name of a mount as people see it: conflict copies say `conflict from NAME …`, and
/// `conflicts` and the conflict note (`user.syncfs.conflict`) carry it (doc/SEMANTICS.md,
/// "Device names").
///
/// Invariants (checked by `init?(validating:)`, the only way to make one): 1 to `maxLength`
/// bytes of UTF-8; no control or format characters (no line breaks, no terminal escapes, no
/// bidirectional overrides), no `/`; no leading or trailing white space; not `.` or `..`. So a
/// name fits in a file name and prints as one line.
///
/// The name is chosen at a state directory's first mount and kept as the `device_name` fact: the
/// host name and a short stable suffix from the state directory's device ID (`vm-3f2a`), so two
/// mounts of one container on one machine never share a name; `mount --device-name NAME` sets it.
/// A name read from elsewhere — a stored fact, a conflict note another machine wrote — is remote
/// data: it is re-validated where it is used (`sanitised` for display).
public struct DeviceName: Sendable, Equatable, CustomStringConvertible {
    public let text: String
    /// The longest name, in bytes.
    static let maxLength = 64

    public var description: String { text }

    /// `text` if it is a valid name, else nil (`problem` says why).
    public init?(validating text: String) {
        guard Self.problem(text) == nil else { return nil }
        self.text = text
    }

    /// Why `text` is not a valid name, or nil.
    public static func problem(_ text: String) -> String? {
        if text.isEmpty { return "a device name cannot be empty" }
        if text.utf8.count > maxLength { return "a device name is at most \(maxLength) bytes" }
        if text == "." || text == ".." { return "a device name cannot be '.' or '..'" }
        if text.contains("/") { return "a device name cannot contain '/'" }
        if text.unicodeScalars.contains(where: isUnprintable) {
            return "a device name must be printable (no control characters)"
        }
        if text.first?.isWhitespace == true || text.last?.isWhitespace == true {
            return "a device name cannot begin or end with white space"
        }
        return nil
    }

    /// The default name for the state directory with `deviceID` on a machine called `hostName`:
    /// the host name made valid (shortened, unprintable characters and `/` replaced) and `-` with
    /// the first four characters of the device ID.
    public static func standard(hostName: String, deviceID: String) -> DeviceName {
        let suffix = "-" + String(deviceID.filter(\.isHexDigit).prefix(4).lowercased())
        let host = sanitised(hostName, maxBytes: maxLength - suffix.utf8.count, fallback: "host")
        return DeviceName(validating: host + suffix) ?? DeviceName(unchecked: "host" + suffix)
    }

    /// `text` (remote data: a conflict note, a stored fact) made fit to show or to put in a file
    /// name: unprintable characters and `/` become `_`, white space at either end is dropped, and
    /// it is cut to `maxBytes` on a character boundary; `fallback` if nothing is left.
    static func sanitised(_ text: String, maxBytes: Int = maxLength, fallback: String = "unknown")
        -> String
    {
        let trimmed = printable(text, maxBytes: maxBytes).replacingSlashes().trimmingWhiteSpace()
        return trimmed.isEmpty || trimmed == "." || trimmed == ".." ? fallback : trimmed
    }

    /// `text` (remote data) with every unprintable character replaced by `_`, cut to
    /// `maxBytes` on a character boundary: one line, no terminal escapes.
    public static func printable(_ text: String, maxBytes: Int) -> String {
        var result = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            let kept: Unicode.Scalar = isUnprintable(scalar) ? "_" : scalar
            let size = String(kept).utf8.count
            if bytes + size > maxBytes { break }
            result.unicodeScalars.append(kept)
            bytes += size
        }
        return result
    }

    private init(unchecked text: String) { self.text = text }

    private static func isUnprintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
            return true
        default:
            return false
        }
    }
}

extension String {
    fileprivate func replacingSlashes() -> String {
        String(String.UnicodeScalarView(unicodeScalars.map { $0 == "/" ? "_" : $0 }))
    }

    fileprivate func trimmingWhiteSpace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
