import SyncBackend

/// Where a container lives on a sync server: `http(s)://HOST[:PORT]/NAME`, as `syncfs-mount
/// mount` takes it.
///
/// Invariants: the scheme is `http` or `https`; the host is non-empty (an IPv6 literal stays in
/// brackets); `name` passes `ContainerName.isValid`; there is no query, fragment, user info or
/// further path. `origin` is the URL without the name (`https://host:8443`).
public struct ServerAddress: Equatable, Sendable, CustomStringConvertible {
    public let isTLS: Bool
    /// `scheme://host[:port]`, no trailing slash.
    public let origin: String
    public let host: String
    public let name: String

    /// Whether `text` looks like a server address at all (it starts with `http://` or
    /// `https://`); a local container path never does.
    public static func looksLikeURL(_ text: String) -> Bool {
        text.hasPrefix("http://") || text.hasPrefix("https://")
    }

    /// Parses `text`; the error message says what is wrong.
    public init(parsing text: String) throws(AddressError) {
        let scheme: String
        if text.hasPrefix("https://") {
            scheme = "https"
        } else if text.hasPrefix("http://") {
            scheme = "http"
        } else {
            throw AddressError("'\(text)' is not an http:// or https:// URL")
        }
        var rest = Substring(text.dropFirst(scheme.count + 3))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let slash = rest.firstIndex(of: "/") else {
            throw AddressError("'\(text)' names no container: use \(scheme)://HOST:PORT/NAME")
        }
        let authority = String(rest[..<slash])
        let name = String(rest[rest.index(after: slash)...])
        guard !authority.isEmpty, !authority.contains("@") else {
            throw AddressError("'\(text)' has no host (or has user info, which is not supported: use --token-file)")
        }
        guard !name.contains("?"), !name.contains("#"), !name.contains("/") else {
            throw AddressError("'\(text)': the container name must be the only path segment, without query")
        }
        guard ContainerName.isValid(name) else {
            throw AddressError(
                "'\(name)' is not a container name: 1 to 64 of A-Z a-z 0-9 . _ -, not starting with '.'")
        }
        let host: String
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw AddressError("'\(text)': unclosed '['") }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
        } else {
            host = String(authority.split(separator: ":", maxSplits: 1).first ?? "")
        }
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]"),
            !authority.hasPrefix("[") || authority[..<colon].hasSuffix("]")
        {
            let port = authority[authority.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number) else {
                throw AddressError("'\(text)': '\(port)' is not a port number")
            }
        }
        guard !host.isEmpty else { throw AddressError("'\(text)' has no host") }
        self.isTLS = scheme == "https"
        // Host names are case-insensitive: one spelling, so one default state directory.
        self.origin = scheme + "://" + authority.lowercased()
        self.host = host.lowercased()
        self.name = name
    }

    /// The full URL of `path` (one of `WireProtocol.Path`'s).
    public func url(_ path: String) -> String { origin + path }

    /// The normalised URL (`origin/NAME`, host in lower case, no trailing slash): what a mount
    /// records and keys its default state directory by.
    public var description: String { origin + "/" + name }

    /// Whether the host is this machine (plain HTTP is only reasonable there).
    public var isLoopback: Bool { host == "localhost" || host.hasPrefix("127.") || host == "::1" }
}

/// A server address that cannot be used, with a message for people.
public struct AddressError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
