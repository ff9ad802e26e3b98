import Glibc

/// A CONTAINER that reads as a server address typed without its scheme
/// (`sync.example.org:8443/box`): named as such, rather than taken for a local path that does not
/// exist or answered with a message about `--token-file`.
enum MissingScheme {
    /// The message for `container` if it is no URL, no existing path, and looks like a server:
    /// `HOST:PORT` first (a port number after a colon), or `HOST/…` with a dot in HOST when a
    /// server option (`--token-file`, `--ca-file`) is given; else nil.
    static func message(_ container: String, serverOptionGiven: Bool) -> String? {
        guard !container.contains("://"), !container.hasPrefix("/"), !container.hasPrefix(".") else { return nil }
        var info = stat()
        guard lstat(container, &info) != 0 else { return nil }
        let host = container.prefix { $0 != "/" }
        let looksLikeServer: Bool
        if let colon = host.lastIndex(of: ":") {
            let port = host[host.index(after: colon)...]
            looksLikeServer =
                colon != host.startIndex && !port.isEmpty && port.count <= 5 && port.allSatisfy(\.isASCIIDigit)
        } else {
            looksLikeServer = serverOptionGiven && (host.contains(".") || host == "localhost")
        }
        guard looksLikeServer else { return nil }
        return "'\(container)' reads as a server address without its scheme; write https://\(container) "
            + "(http:// only on loopback)"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
