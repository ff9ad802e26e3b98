/// Where `--metrics-listen` serves the scrape: `PORT` or `:PORT` is the loopback address
/// (127.0.0.1); `HOST:PORT` and `[IPv6]:PORT` are taken as given, so another interface is only
/// ever used when it is named explicitly. The scrape has no authentication: an operator who
/// names a non-loopback host chooses who may read it (a firewall, a private network).
public struct MetricsListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    /// 0: the system picks a free port (tests).
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `PORT`, `:PORT`, `HOST:PORT` or `[IPv6]:PORT`; nil for anything else or a port
    /// outside 0...65535.
    public init?(parsing text: String) {
        func port(_ digits: Substring) -> Int? {
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = Int(digits), (0...65_535).contains(value)
            else { return nil }
            return value
        }
        if let bare = port(Substring(text)) {
            self.init(host: Self.loopback, port: bare)
        } else if text.hasPrefix(":"), let only = port(text.dropFirst()) {
            self.init(host: Self.loopback, port: only)
        } else if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard !host.isEmpty, rest.hasPrefix(":"), let value = port(rest.dropFirst()) else { return nil }
            self.init(host: String(host), port: value)
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, let value = port(parts[1]) else { return nil }
            self.init(host: String(parts[0]), port: value)
        }
    }

    /// The address a bare port means.
    public static let loopback = "127.0.0.1"

    /// Whether the host is a loopback name or address (only this machine can scrape).
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
