import SyncBackend

/// The JSON bodies of the link endpoints (`GET /v1/links/SECRET…`; doc/PROTOCOL.md "Share links").

/// `GET /v1/links/SECRET`: what the link opens.
public struct LinkInfo: Codable, Equatable, Sendable {
    /// `view`, `download` or `upload-only`.
    public var kind: String
    /// The last name of the link's path (the container's name for its root).
    public var name: String
    /// Unix seconds; nil for a link without expiry.
    public var expires: Int64?
    /// Downloads still allowed; nil without a limit (and for an upload-only link).
    public var downloadsLeft: Int64?
    /// A download link's file size in bytes; nil for the other kinds.
    public var size: Int64?
}

/// `GET /v1/links/SECRET/list`: one page of a folder below a view link.
public struct LinkListing: Codable, Equatable, Sendable {
    public var entries: [LinkListingEntry]
    /// The `after` of the next page (an opaque cursor); nil on the last page.
    public var next: String?
}

public struct LinkListingEntry: Codable, Equatable, Sendable {
    /// The name (bytes that are not UTF-8 shown as U+FFFD).
    public var name: String
    /// Its path below the link, for `path=`; nil when a name on the way is not UTF-8 (it can be
    /// listed, not opened, through a link).
    public var path: String?
    /// `file`, `directory` or `symlink` (a symlink's target is not shown, nor followed).
    public var kind: String
    /// Bytes (files only; 0 for the others).
    public var size: Int64
    /// Modification time, Unix nanoseconds.
    public var mtime: Int64
}

/// `POST /v1/links/SECRET/upload`: what was stored (the name is not told: a drop box says
/// nothing about what it holds, not even whether a name was taken).
public struct LinkUploadAnswer: Codable, Equatable, Sendable {
    public var size: Int64
}

extension NodeKind {
    /// The word the link and admin answers use.
    var wireWord: String {
        switch self {
        case .file: return "file"
        case .directory: return "directory"
        case .symlink: return "symlink"
        }
    }
}

/// A listing page's cursor: the last name's bytes in lowercase hex (names need not be UTF-8).
enum HexName {
    static func encode(_ name: [UInt8]) -> String { TokenFormat.hex(name) }

    /// The name, or nil for text that is not 2...510 lowercase hex digits.
    static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard (2...510).contains(digits.count), digits.count % 2 == 0 else { return nil }
        var name: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            name.append(high << 4 | low)
        }
        return name
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: return digit - 0x30
        case 0x61...0x66: return digit - 0x61 + 10
        default: return nil
        }
    }
}
