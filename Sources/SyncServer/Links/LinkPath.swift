/// A path of names below a share link's prefix (or a link's prefix below the container's root),
/// as a request or an administrator writes it: `/`-separated names, no leading or trailing `/`,
/// the empty path for the place itself.
///
/// Contract: every name is 1...255 bytes without NUL, and never `.` or `..`, so a path can only
/// name something below where it starts; at most `maximumBytes` bytes and `maximumDepth` names.
/// The text arrives percent-decoded already (query parameters), so `%2e%2e` is `..` and refused,
/// and `%2f` is a separator like `/`. Names that are not UTF-8 cannot be written here.
struct LinkPath: Equatable, Sendable {
    let names: [[UInt8]]

    static let maximumBytes = 4096
    static let maximumDepth = 256

    /// The path `text` names, or why it is not one.
    static func parse(_ text: String) -> Result<LinkPath, LinkPathError> {
        guard !text.isEmpty else { return .success(LinkPath(names: [])) }
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumBytes else { return .failure(.tooLong) }
        let names = bytes.split(separator: 0x2F, omittingEmptySubsequences: false).map(Array.init)
        guard names.count <= maximumDepth else { return .failure(.tooDeep) }
        for name in names {
            guard !name.isEmpty else { return .failure(.emptyName) }
            guard name != [0x2E], name != [0x2E, 0x2E] else { return .failure(.dotName) }
            guard name.count <= 255, !name.contains(0) else { return .failure(.badName) }
        }
        return .success(LinkPath(names: names))
    }

    /// One name alone (an upload's): a path of exactly one name.
    static func name(_ text: String) -> Result<[UInt8], LinkPathError> {
        switch parse(text) {
        case .failure(let error): return .failure(error)
        case .success(let path):
            guard path.names.count == 1 else { return .failure(path.names.isEmpty ? .emptyName : .notOneName) }
            return .success(path.names[0])
        }
    }

    /// The path as it is written (names joined by `/`).
    var text: String { names.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/") }
}

/// Why a text is not a `LinkPath`.
enum LinkPathError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLong, tooDeep, emptyName, dotName, badName, notOneName

    var description: String {
        switch self {
        case .tooLong: return "a path has at most \(LinkPath.maximumBytes) bytes"
        case .tooDeep: return "a path has at most \(LinkPath.maximumDepth) names"
        case .emptyName: return "a path has no empty names (no leading, trailing or double /)"
        case .dotName: return "a path has no . or .. names"
        case .badName: return "a name has 1-255 bytes and no NUL"
        case .notOneName: return "a name has no /"
        }
    }
}
